package bench

import (
	"strconv"

	"github.com/directaid/directaid/internal/benchdata"
)

// Publication bodies vary (type, title, text, place, phone) so that the on-disk size per record reflects
// what compression does to real text rather than to one body repeated a million times.
var (
	titles     = benchdata.Titles
	words      = benchdata.Words
	names      = []string{"Ana Gómez", "Luis Pérez", "María Rodríguez", "Carlos Ramírez", "Diana López", "Jorge Castaño", "Paula Giraldo", "Andrés Ospina"}
	hoods      = []string{"Centro", "La Clarita", "Los Quindos", "El Bosque", "La Patria", "Cuba", "Boston", "San José"}
	categories = benchdata.Categories
	urgencies  = []string{"urgent", "needed", "stable"}
	statuses   = []string{"full", "needs_volunteers", "needs_resources"}
)

// rng is splitmix64: cheap, and the same n always gives the same body (retries send identical bytes).
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func pick(r *rng, s []string) string { return s[r.intn(len(s))] }

// publishBody returns a body generator for publications whose externalId is tag-n: every n is a new
// record, and the same n is a retry of the same record. The records vary as real ones do: a point
// anywhere in the area the read scenarios search (0.8° × 0.6°, about 89 × 67 km of the Eje Cafetero), a
// title of 4 to 6 words and a text of 8 to 37 from the vocabulary, every category, both types.
func publishBody(tag string) func(n int64, b []byte) []byte { return bodies(tag, true) }

// PublishBody is publishBody, for the in-process benchmarks of the request path (backend's
// BenchmarkPublishHandler): the bodies the publishing rows send.
func PublishBody(tag string) func(n int64, b []byte) []byte { return publishBody(tag) }

// onePointBody is publishBody with one point, one title and one text for every record: what the
// publishing rows sent before they varied, kept as a row to compare (it writes the fewest index keys).
func onePointBody(tag string) func(n int64, b []byte) []byte { return bodies(tag, false) }

func bodies(tag string, vary bool) func(n int64, b []byte) []byte {
	var seed uint64
	for _, c := range tag {
		seed = seed*31 + uint64(c)
	}
	return func(n int64, b []byte) []byte {
		r := rng(seed ^ uint64(n)*0x9e3779b97f4a7c15)
		offer := r.intn(4) == 0
		b = append(b, `{"type":"`...)
		if offer {
			b = append(b, "offer"...)
		} else {
			b = append(b, "request"...)
		}
		b = append(b, `","source":"bench","externalId":"`...)
		b = append(b, tag...)
		b = append(b, '-')
		b = strconv.AppendInt(b, n, 10)
		b = append(b, `","emergencySlug":"eje-cafetero","title":"`...)
		if vary {
			b = appendWords(b, &r, 4+r.intn(3))
		} else {
			b = append(b, titles[0]...)
		}
		b = append(b, `","description":"`...)
		if vary {
			b = appendWords(b, &r, 8+r.intn(30))
		} else {
			b = append(b, "Sin agua desde el sismo"...)
		}
		b = append(b, `.","category":"`...)
		b = append(b, pick(&r, categories)...)
		b = append(b, `","contactName":"`...)
		b = append(b, pick(&r, names)...)
		b = append(b, `","contactWhatsapp":"+57 30`...)
		b = strconv.AppendInt(b, int64(r.intn(6)), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(1000000+r.intn(9000000)), 10)
		b = append(b, `","publishContact":true,"address":"Calle `...)
		b = strconv.AppendInt(b, int64(1+r.intn(99)), 10)
		b = append(b, " # "...)
		b = strconv.AppendInt(b, int64(1+r.intn(99)), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(1+r.intn(99)), 10)
		if vary {
			b = append(b, `","latitude":`...)
			b = strconv.AppendFloat(b, 4.4+float64(r.intn(80000))/1e5, 'f', 5, 64)
			b = append(b, `,"longitude":`...)
			b = strconv.AppendFloat(b, -76.0+float64(r.intn(60000))/1e5, 'f', 5, 64)
		} else {
			b = append(b, `","latitude":4.5339,"longitude":-75.6811`...)
		}
		if offer {
			b = append(b, `,"collectionCenterStatus":"`...)
			b = append(b, pick(&r, statuses)...)
			return append(b, `"}`...)
		}
		b = append(b, `,"neighborhood":"`...)
		b = append(b, pick(&r, hoods)...)
		b = append(b, `","urgency":"`...)
		b = append(b, pick(&r, urgencies)...)
		b = append(b, `","neededPeople":`...)
		b = strconv.AppendInt(b, int64(1+r.intn(200)), 10)
		return append(b, '}')
	}
}

// appendWords appends n words of the vocabulary, separated by spaces.
func appendWords(b []byte, r *rng, n int) []byte {
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, pick(r, words)...)
	}
	return b
}
