package testserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validatorpkg "github.com/pb33f/libopenapi-validator"
)

// Validator checks answers against one OpenAPI document with pb33f/libopenapi-validator.
type Validator struct {
	mu sync.Mutex
	v  validatorpkg.Validator
}

// NewValidator builds a Validator from an OpenAPI document (for tests that serve the handler in process).
func NewValidator(spec []byte) (*Validator, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("parse OpenAPI: %w", err)
	}
	v, errs := validatorpkg.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("build validator: %v", errs)
	}
	return &Validator{v: v}, nil
}

// CheckOpenAPI validates a request/response pair (the response body already read into body) against the
// OpenAPI document the server serves, with pb33f/libopenapi-validator, and fails the test on any mismatch.
func (s *Server) CheckOpenAPI(req *http.Request, resp *http.Response, body []byte) {
	s.t.Helper()
	if err := s.checkOpenAPI(req, resp, body); err != nil {
		s.t.Errorf("%s %s → %d does not match the OpenAPI document: %v\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
}

func (s *Server) checkOpenAPI(req *http.Request, resp *http.Response, body []byte) error {
	s.mu.Lock()
	if s.validator == nil {
		r, err := http.Get(s.URL + "/api/public/openapi.json")
		if err != nil {
			s.mu.Unlock()
			return err
		}
		spec, _ := io.ReadAll(r.Body)
		r.Body.Close()
		v, err := NewValidator(spec)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.validator = v
	}
	val := s.validator
	s.mu.Unlock()
	return val.Check(req, resp, body)
}

// Check validates a request/response pair, the response body already read into body.
func (val *Validator) Check(req *http.Request, resp *http.Response, body []byte) error {
	val.mu.Lock()
	defer val.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	defer func() { resp.Body = io.NopCloser(bytes.NewReader(body)) }()
	ok, errs := val.v.ValidateHttpResponse(req, resp)
	if ok {
		return nil
	}
	var msgs []string
	for _, e := range errs {
		msg := e.Message + ": " + e.Reason
		for _, sv := range e.SchemaValidationErrors {
			msg += " [" + sv.FieldPath + " " + sv.Reason + "]"
		}
		msgs = append(msgs, msg)
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// ValidateDocument checks the served document with the same library (OpenAPI 3.1 structure and schemas).
func (s *Server) ValidateDocument() error {
	r, err := http.Get(s.URL + "/api/public/openapi.json")
	if err != nil {
		return err
	}
	defer r.Body.Close()
	spec, _ := io.ReadAll(r.Body)
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return err
	}
	v, errs := validatorpkg.NewValidator(doc)
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		var msgs []string
		for _, e := range verrs {
			msgs = append(msgs, e.Message+": "+e.Reason)
		}
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}
