package store

import (
	"context"
	"errors"
	"time"
)

// Response is one "yo puedo ayudar" to a record: a message and, optionally, the responder's name and
// WhatsApp number, which only the record's publisher sees. Status is one of schema's Response* statuses.
type Response struct {
	RecordID        string    `json:"recordId"`
	ID              string    `json:"id"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
	ExpiresAt       time.Time `json:"expiresAt"`
	Status          string    `json:"status"`
	Message         string    `json:"message,omitempty"`
	ContactName     string    `json:"contactName,omitempty"`
	ContactWhatsapp string    `json:"contactWhatsapp,omitempty"`
	ContactE164     string    `json:"contactE164,omitempty"`
	// Reporters are the keyed hashes of the addresses that reported it (each once).
	Reporters []string `json:"reporters,omitempty"`
	// Cleared are the reporters whose reports an operator reviewed when restoring the response: their
	// reports no longer count towards hiding it.
	Cleared []string `json:"cleared,omitempty"`
	// Uncounted marks a response that reaches its publisher but is left out of the public count
	// (ResponseCounts): its responder's network had already added its share to the count.
	Uncounted bool `json:"uncounted,omitempty"`
}

// ActiveAt reports whether the response is active at: stored active and not past its ExpiresAt.
func (r *Response) ActiveAt(at time.Time) bool {
	return r.Status == ResponseActive && at.Before(r.ExpiresAt)
}

// CountsAt reports whether the response adds to its record's public count at: active, and not Uncounted.
func (r *Response) CountsAt(at time.Time) bool { return r.ActiveAt(at) && !r.Uncounted }

// ErasePersonal removes what the responder wrote: message, name and phone.
func (r *Response) ErasePersonal() {
	r.Message, r.ContactName, r.ContactWhatsapp, r.ContactE164 = "", "", "", ""
}

// ResponseActive is the status of a response that counts until its ExpiresAt (schema.ResponseActive).
const ResponseActive = "active"

// ErrResponseExists is returned by CreateResponse for a (record, id) pair already stored.
var ErrResponseExists = errors.New("response id taken")

// MaxResponsesPerRecord bounds the responses one record holds, of every status: each read of the record
// counts its active ones, so that a flood of responders from many addresses cannot make its reads, its
// resolve or its publisher's list slow.
const MaxResponsesPerRecord = 300

// ErrTooManyResponses is returned by CreateResponse when the record holds MaxResponsesPerRecord responses.
var ErrTooManyResponses = errors.New("the record holds its most responses")

// Responses is what the responses to records need of a store. Both stores implement it, and storetest
// checks it. Every write returns once durable.
type Responses interface {
	// CreateResponse stores r (RecordID, ID set by the caller); ErrResponseExists when the pair is taken,
	// ErrTooManyResponses when the record holds MaxResponsesPerRecord (checked with the write, so that
	// racing responders cannot pass it).
	CreateResponse(ctx context.Context, r *Response) error
	// UpdateResponse applies fn to a copy of response id of record recordID and stores the result with no
	// other write of it in between: ErrNotFound for an unknown pair, fn's error (nothing stored) when it fails.
	UpdateResponse(ctx context.Context, recordID, id string, fn func(*Response) error) (*Response, error)
	// RecordResponses returns every response of recordID, newest first.
	RecordResponses(ctx context.Context, recordID string) ([]*Response, error)
	// ResponseCounts counts, for each of ids, the responses that count at (CountsAt); ids without any are absent.
	ResponseCounts(ctx context.Context, ids []string, at time.Time) (map[string]int, error)
	// DeleteResponses removes every response of recordID from the database (the record's erasure).
	DeleteResponses(ctx context.Context, recordID string) error
	// HiddenResponses returns every response hidden by reports (status schema.ResponseHidden), by record id
	// then response id: the operator's moderation queue.
	HiddenResponses(ctx context.Context) ([]*Response, error)
}
