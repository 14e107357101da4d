package site

import (
	"context"
	"net/http"
	"net/url"

	"github.com/directaid/directaid/schema"
)

// funcs is a Service made of the functions a test gives; a method without one answers as a service
// with nothing stored: no records, and 404 to every write.
type funcs struct {
	parse   func(url.Values) (schema.ListQuery, []schema.FieldError)
	list    func(ctx context.Context, base string, q schema.ListQuery) (*schema.HelpList, error)
	detail  func(ctx context.Context, base, id string) (*schema.PublicHelpDetail, error)
	publish func(ctx context.Context, body []byte) (int, []byte)
	act     func(ctx context.Context, base, id, token, action string) (int, []byte)
}

func (f *funcs) ParseList(v url.Values) (schema.ListQuery, []schema.FieldError) {
	if f.parse == nil {
		return schema.ListQuery{}, nil
	}
	return f.parse(v)
}

func (f *funcs) List(ctx context.Context, base string, q schema.ListQuery) (*schema.HelpList, error) {
	if f.list == nil {
		return &schema.HelpList{}, nil
	}
	return f.list(ctx, base, q)
}

func (f *funcs) Detail(ctx context.Context, base, id string) (*schema.PublicHelpDetail, error) {
	if f.detail == nil {
		return nil, ErrNotFound
	}
	return f.detail(ctx, base, id)
}

func (f *funcs) Matches(context.Context, string, string, int) (*schema.HelpMatches, error) {
	return &schema.HelpMatches{}, nil
}

func (f *funcs) Publish(ctx context.Context, body []byte) (int, []byte) {
	if f.publish == nil {
		return http.StatusNotFound, nil
	}
	return f.publish(ctx, body)
}

func (f *funcs) Act(ctx context.Context, base, id, token, action string) (int, []byte) {
	if f.act == nil {
		return http.StatusNotFound, nil
	}
	return f.act(ctx, base, id, token, action)
}

func (f *funcs) Responses(context.Context, string, string) (int, []byte) {
	return http.StatusNotFound, nil
}

func (f *funcs) Report(*http.Request, string, []byte) (int, []byte) {
	return http.StatusNotFound, nil
}

func (f *funcs) Respond(*http.Request, string, []byte) (int, []byte) {
	return http.StatusNotFound, nil
}

func (f *funcs) ActOnResponse(*http.Request, string, string, string, string) (int, []byte) {
	return http.StatusNotFound, nil
}
