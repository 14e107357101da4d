// Package sse reads a stream of Server-Sent Events (the live feed's), for tests and the benchmark.
package sse

import (
	"bufio"
	"io"
	"strings"
)

// Block is one block of a stream (the lines up to a blank line): an event, or only an id, a retry or
// comments.
type Block struct {
	ID       string
	HasID    bool
	Event    string
	Data     string
	Retry    string
	Comments []string
}

// Reader reads blocks.
type Reader struct{ r *bufio.Reader }

// NewReader reads the stream r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next block; io.EOF at the end of the stream.
func (r *Reader) Next() (Block, error) {
	var b Block
	var data []string
	started := false
	for {
		line, err := r.r.ReadString('\n')
		if err != nil {
			if started && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return b, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if !started {
				continue
			}
			b.Data = strings.Join(data, "\n")
			return b, nil
		}
		started = true
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "":
			b.Comments = append(b.Comments, value)
		case "id":
			b.ID, b.HasID = value, true
		case "event":
			b.Event = value
		case "data":
			data = append(data, value)
		case "retry":
			b.Retry = value
		}
	}
}
