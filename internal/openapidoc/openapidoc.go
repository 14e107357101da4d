// Package openapidoc reads the part of an OpenAPI document that carries examples, for the tests that
// walk them (schema's, against the built document; e2e's, against the served one).
package openapidoc

import "encoding/json"

// Document is an OpenAPI document's operations with their examples: Paths[path][method].
type Document struct {
	Paths map[string]map[string]Operation `json:"paths"`
}

// Operation is one operation: its request body's and its answers' examples by media type.
type Operation struct {
	OperationID string `json:"operationId"`
	RequestBody *struct {
		Content map[string]Media `json:"content"`
	} `json:"requestBody"`
	// QueryExamples (x-query-examples) are query strings of a GET, each with the status it gets.
	QueryExamples []QueryExample `json:"x-query-examples"`
	Responses     map[string]struct {
		Content map[string]Media `json:"content"`
	} `json:"responses"`
}

// Media is one media type of a body with its examples by name.
type Media struct {
	Examples map[string]Example `json:"examples"`
}

// Example is an Example Object; Status (x-status) is what the server answers a request example with.
type Example struct {
	Value  json.RawMessage `json:"value"`
	Status string          `json:"x-status"`
}

// Parse reads raw, an OpenAPI document as JSON.
func Parse(raw []byte) (*Document, error) {
	var d Document
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// QueryExample is a query string (without "?") a GET is sent with, and Status, what the server answers.
type QueryExample struct {
	Name   string `json:"name"`
	Query  string `json:"query"`
	Status string `json:"x-status"`
}
