package storetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/benchdata"
	"github.com/directaid/directaid/schema"
)

// UniformBox is the area of UniformRecord(n, …): the generator's 0.8° × 0.6°, scaled by √(n/1M) so that
// the density is that of 1M records.
func UniformBox(n int) (lat0, lon0, dLat, dLon float64) {
	s := math.Sqrt(float64(n) / 1e6)
	return 4.4, -76.0, 0.8 * s, 0.6 * s
}

// UniformRecord is the i-th of n records of make bench's 1M generator (internal/bench's
// publishBody("million"): one emergency, uniform over UniformBox, a quarter offers, benchdata's words),
// created at t: the distribution that the in-process read benchmarks and the decoders' tests reproduce.
func UniformRecord(n, i int, t time.Time) *store.Record {
	r := rand.New(rand.NewPCG(uint64(i), 11))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	rec := &store.Record{CreatedAt: t.UTC().Truncate(time.Millisecond), Status: store.StatusOpen}
	p := &rec.Publication
	p.Type = schema.TypeRequest
	if r.IntN(4) == 0 {
		p.Type = schema.TypeOffer
	}
	p.Source, p.ExternalID, p.EmergencySlug = "bench", "million-"+strconv.Itoa(i), "eje-cafetero"
	p.Title = pick(benchdata.Titles)
	words := make([]string, 8+r.IntN(30))
	for j := range words {
		words[j] = pick(benchdata.Words)
	}
	p.Description = strings.Join(words, " ") + "."
	p.Category = pick(benchdata.Categories)
	p.ContactName, p.ContactWhatsapp, p.ContactE164, p.PublishContact = "Ana Gómez", "+57 300 1234567", "+573001234567", true
	p.Address = fmt.Sprintf("Calle %d # %d-%d", 1+r.IntN(99), 1+r.IntN(99), 1+r.IntN(99))
	lat0, lon0, dLat, dLon := UniformBox(n)
	lat, lon := lat0+r.Float64()*dLat, lon0+r.Float64()*dLon
	p.Latitude, p.Longitude = &lat, &lon
	if p.Type == schema.TypeRequest {
		p.Urgency = pick(schema.Urgencies)
		people := 1 + r.IntN(200)
		p.NeededPeople = &people
	}
	rec.ID = store.NewIDNear(t, p.Latitude, p.Longitude) // as the service makes it
	return rec
}
