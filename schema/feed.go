package schema

import "time"

// The live feed: GET EventsPath, a stream of Server-Sent Events.

// The events of the live feed (the SSE `event:` field).
const (
	// EventPublished carries a record new to the feed (its first version) in the list-item shape.
	EventPublished = "published"
	// EventUpdated carries a later version of a record in the list-item shape.
	EventUpdated = "updated"
	// EventRemoved carries a FeedRemoved: the record left what the filters select.
	EventRemoved = "removed"
	// EventReconnect is the last event of a stream the server ends: resume with lastEventId.
	EventReconnect = "reconnect"
)

// Codes of a reconnect event and of the feed's refusals.
const (
	CodeFeedBehind     = "feed_behind"      // the subscriber did not read fast enough
	CodeFeedClosing    = "feed_closing"     // the server is reloading or stopping
	CodeCursorTooOld   = "cursor_too_old"   // 410: too many changes to replay since the cursor
	CodeTooManyStreams = "too_many_streams" // 429: the client address has its streams open
)

// FeedMaxReplay is how many changes a resumed stream replays at most (after the filters the stores
// apply: emergency, type, category, urgency); a cursor further behind is answered 410 cursor_too_old.
const FeedMaxReplay = 10000

// FeedRemoved is the data of a removed event: the record was withdrawn or hidden, or (with status) its
// status is no longer the one asked for. It has no content.
type FeedRemoved struct {
	ID        string    `json:"id"`
	Status    string    `json:"status" jsonschema:"enum=open,enum=resolved,enum=withdrawn,enum=expired,enum=hidden"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// FeedReconnect is the data of the reconnect event that ends a stream.
type FeedReconnect struct {
	Code        string `json:"code" jsonschema:"enum=feed_behind,enum=feed_closing"`
	Error       string `json:"error"`
	LastEventID string `json:"lastEventId" jsonschema_description:"El id del último evento de este flujo: reconéctese con la cabecera Last-Event-ID (o since) con este valor."`
}
