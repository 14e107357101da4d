package testserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validatorpkg "github.com/pb33f/libopenapi-validator"
)

// Validator checks answers against one OpenAPI document with pb33f/libopenapi-validator.
type Validator struct {
	mu    sync.Mutex
	v     validatorpkg.Validator
	paths []declaredPath
}

// declaredPath is a path of the document (its template as a pattern) and the methods it declares.
type declaredPath struct {
	re      *regexp.Regexp
	methods map[string]bool
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
	var raw struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(spec, &raw); err != nil {
		return nil, fmt.Errorf("parse OpenAPI paths: %w", err)
	}
	val := &Validator{v: v}
	for tmpl, item := range raw.Paths {
		segs := strings.Split(tmpl, "/")
		for i, seg := range segs {
			if strings.HasPrefix(seg, "{") {
				segs[i] = "[^/]+"
			} else {
				segs[i] = regexp.QuoteMeta(seg)
			}
		}
		dp := declaredPath{re: regexp.MustCompile("^" + strings.Join(segs, "/") + "$"), methods: map[string]bool{}}
		for m := range item {
			dp.methods[strings.ToUpper(m)] = true
		}
		val.paths = append(val.paths, dp)
	}
	return val, nil
}

// undeclared405 reports a 405 to a method the document does not list for a path it has: the document
// says that in prose (info.description), not as an operation. It checks what the prose promises: an
// Allow header naming only declared methods, and an Error (code method_not_allowed) or JSON-RPC error.
func (val *Validator) undeclared405(req *http.Request, resp *http.Response, body []byte) (bool, error) {
	if resp.StatusCode != http.StatusMethodNotAllowed {
		return false, nil
	}
	for _, p := range val.paths {
		if !p.re.MatchString(req.URL.Path) || p.methods[req.Method] {
			continue
		}
		allow := resp.Header.Get("Allow")
		for _, m := range strings.Split(allow, ",") {
			if m = strings.TrimSpace(m); !p.methods[m] {
				return true, fmt.Errorf("405 Allow %q names %q, which the document does not declare", allow, m)
			}
		}
		if req.Method == http.MethodHead {
			return true, nil
		}
		var e struct {
			Code  string          `json:"code"`
			Error json.RawMessage `json:"error"` // a text in an Error, an object in a JSON-RPC error
		}
		if json.Unmarshal(body, &e) != nil || (e.Code != "method_not_allowed" && !bytes.HasPrefix(e.Error, []byte("{"))) {
			return true, fmt.Errorf("405 body is neither an Error method_not_allowed nor a JSON-RPC error: %s", body)
		}
		return true, nil
	}
	return false, nil
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
	val, err := s.Validator()
	if err != nil {
		return err
	}
	return val.Check(req, resp, body)
}

// Check validates a request/response pair, the response body already read into body.
func (val *Validator) Check(req *http.Request, resp *http.Response, body []byte) error {
	if ok, err := val.undeclared405(req, resp, body); ok {
		return err
	}
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

// CheckRequest validates a request (its body already in req) against the document, with the same
// library: nil when the document admits it.
func (val *Validator) CheckRequest(req *http.Request) error {
	val.mu.Lock()
	defer val.mu.Unlock()
	ok, errs := val.v.ValidateHttpRequest(req)
	if ok {
		return nil
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Message+": "+e.Reason)
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// Validator is the validator of the served document (built on first use, shared with CheckOpenAPI).
func (s *Server) Validator() (*Validator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.validator == nil {
		r, err := http.Get(s.URL + "/api/public/openapi.json")
		if err != nil {
			return nil, err
		}
		spec, _ := io.ReadAll(r.Body)
		r.Body.Close()
		v, err := NewValidator(spec)
		if err != nil {
			return nil, err
		}
		s.validator = v
	}
	return s.validator, nil
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
