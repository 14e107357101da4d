package badgerstore

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// The word index of q. q keeps its meaning: every folded query word must occur as a substring of the
// record's folded text (store.MatchText). The text's tokens are its maximal runs of letters and digits.
// A query word made of letters and digits only lies inside one token wherever it occurs, so the records
// that contain it are exactly those having a token that contains it; a word with other characters ("s/n")
// needs each of its runs in some token, which narrows the candidates, and is then checked on the text.
// The index is, per token, a posting list (newest first, with the summary, so filters need no record read;
// stored in blocks, postings.go)
// and a counter of the records having that token; the vocabulary of tokens is also kept in memory, where
// the tokens containing a query word are found (insul → insulina, insulinas; sulina → insulina).
var (
	prefixWord  = []byte("iw\x00") // + status code + token + 0x00 + inv(id[:bucketLen]) + seq → block of postings (postings.go)
	prefixVocab = []byte("iv\x00") // + status code + token → encodeWordCount: the records of that status having it, as of a checkpoint (cellmem.go)
)

const (
	idLen = 16 // store.NewID's length
	// maxWordTokens bounds the tokens one query word may expand to for the index to drive a query (one
	// iterator each); a word in more tokens (a letter, a syllable) is checked on the text of the records
	// the other words, or the time or geographic index, yield.
	maxWordTokens = 64
	// maxNearCollect bounds the records of a word that a radius query collects to order them by distance;
	// past it, the radius walk drives and the words are checked on the text.
	maxNearCollect = 50000
	// maxExactWordWalk bounds the candidates read to count a q total exactly; past it the total is
	// estimated from a sample.
	maxExactWordWalk = 20000
)

func notAlnum(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// functionWords are folded Spanish function words, in most records and so useless to narrow a search:
// they get no posting and no counter (a fifth of the postings of make bench's generator). A query run
// that one of them contains (de, el, par, ara…) may match a record through that token alone, so it
// cannot drive the index: like a run of more than maxWordTokens tokens, it is checked on the text of the
// candidates that another word or the time index yields. The list only ever changes with indexVersion.
var functionWords = []string{"a", "al", "con", "de", "del", "desde", "e", "el", "en", "es", "la", "las", "le",
	"lo", "los", "mi", "no", "o", "para", "por", "que", "se", "sin", "su", "sus", "u", "un", "una", "y"}

func isFunctionWord(tok string) bool { _, ok := slices.BinarySearch(functionWords, tok); return ok }

// inFunctionWord reports whether a query run occurs inside a function word.
func inFunctionWord(run string) bool {
	return slices.ContainsFunc(functionWords, func(fw string) bool { return strings.Contains(fw, run) })
}

// textTokens are the distinct indexed tokens of a folded text: its maximal runs of letters and digits but
// the function words.
func textTokens(text string) []string {
	return slices.DeleteFunc(store.TextTokens(text), isFunctionWord)
}

// Like the other indexes, the word index is partitioned by status: an update moves a record's postings
// (index.go's replace) and its counts.
func wordPrefix(st uint8, tok string) []byte {
	return appendWordPrefix(make([]byte, 0, len(prefixWord)+1+len(tok)+1+16), st, tok)
}

// appendWordPrefix appends wordPrefix(st, tok) to b.
func appendWordPrefix(b []byte, st uint8, tok string) []byte {
	return append(append(append(append(b, prefixWord...), '0'+st), tok...), 0)
}

// stTok is a status code and a token, the key of a word counter after prefixVocab.
func stTok(st uint8, tok string) string { return string(rune('0'+st)) + tok }

func vocabKey(stTok string) []byte { return append(slices.Clone(prefixVocab), stTok...) }

// wordEntries are the posting entries of a record.
func wordEntries(st uint8, text string, sum, inv []byte) []kv {
	toks := textTokens(text)
	size := 0
	for _, tok := range toks {
		size += len(prefixWord) + 1 + len(tok) + 1 + len(inv)
	}
	out := make([]kv, 0, len(toks))
	keys := make([]byte, 0, size) // every key, one allocation: wordPrefix(st, tok) + inv
	for _, tok := range toks {
		start := len(keys)
		keys = append(appendWordPrefix(keys, st, tok), inv...)
		out = append(out, kv{keys[start:len(keys):len(keys)], sum})
	}
	return out
}

// vocabulary is the set of tokens in memory. It may hold tokens that a snapshot does not (they are added
// before their transaction commits, and never removed): a query then reads their empty posting lists.
type vocabulary struct {
	mu   sync.RWMutex
	set  map[string]struct{}
	list []string // in no order: a query reads every token, and the merge orders the records
}

func (v *vocabulary) add(toks []string) {
	v.mu.RLock()
	var fresh []string
	for _, t := range toks {
		if _, ok := v.set[t]; !ok {
			fresh = append(fresh, t)
		}
	}
	v.mu.RUnlock()
	if len(fresh) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.set == nil {
		v.set = map[string]struct{}{}
	}
	for _, t := range fresh {
		if _, ok := v.set[t]; !ok {
			v.set[t] = struct{}{}
			v.list = append(v.list, t)
		}
	}
}

// containing returns the tokens that contain w, at most limit+1 of them (more than limit: too many).
func (v *vocabulary) containing(w string, limit int) []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []string
	for _, t := range v.list {
		if strings.Contains(t, w) {
			if out = append(out, t); len(out) > limit {
				break
			}
		}
	}
	return out
}

// loadVocabulary reads the stored vocabulary.
func (s *Store) loadVocabulary() error {
	var toks []string
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixVocab})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			toks = append(toks, string(it.Item().Key()[len(prefixVocab)+1:]))
		}
		return nil
	})
	s.vocab.add(toks)
	return err
}

// addWords counts rec's tokens in the delta (n = -1 takes them out).
func (d *aggDelta) addWords(rec *store.Record, n int64) {
	if d.words == nil {
		d.words = map[string]int64{}
	}
	st := statusCode(rec.Status)
	for _, tok := range textTokens(store.SearchText(rec)) {
		d.words[stTok(st, tok)] += n
	}
}

// addWordKeys counts, n times, the tokens of the word postings among entries (a record's index entries,
// indexEntries): the counters count exactly the postings written, and the writer does not fold and
// split the text again.
func (d *aggDelta) addWordKeys(entries []kv, n int64) {
	if d.words == nil {
		d.words = map[string]int64{}
	}
	for _, e := range entries {
		if !bytes.HasPrefix(e.k, prefixWord) || len(e.k) < len(prefixWord)+2 {
			continue
		}
		// wordPrefix: the status code, then the token up to its 0x00 (a token has letters and digits only)
		if end := bytes.IndexByte(e.k[len(prefixWord)+1:], 0); end >= 0 {
			d.words[string(e.k[len(prefixWord):len(prefixWord)+1+end])] += n
		}
	}
}

// tokens are the tokens of the delta, for the in-memory vocabulary.
func (d *aggDelta) tokens() []string {
	out := make([]string, 0, len(d.words))
	for k := range d.words {
		out = append(out, k[1:])
	}
	return out
}

// wordPlan is how a q query is answered: the tokens containing one run of letters and digits of one
// query word (the most selective) yield the candidates, and the words are checked on the text unless
// the candidates are exactly the matches (one word, letters and digits only). A nil plan means that no
// word is selective enough: the old way (a time or radius walk checking every record's text) answers.
type wordPlan struct {
	words     []string
	st        uint8    // the status partition
	tokens    []string // the tokens containing the driver run
	counts    int64    // the sum of their counters: at least the records having any of them
	empty     bool     // no token contains a run: nothing matches
	checkText bool
	// budget, when > 0, stops a scan after reading that many records (spent is then set); postings
	// counts the driver's postings of the records read (a record having two of its tokens has two).
	budget, read, postings int
	spent                  bool
}

func planWords(cells *cellView, v *vocabulary, words []string, f *filter, maxTokens int) (*wordPlan, error) {
	if f.st < 0 {
		return nil, nil // every status: not an index's partition
	}
	st := uint8(f.st)
	var best *wordPlan
	for _, w := range words {
		for _, run := range strings.FieldsFunc(w, notAlnum) {
			if inFunctionWord(run) {
				continue
			}
			toks := v.containing(run, maxTokens)
			if len(toks) > maxTokens {
				continue
			}
			p := &wordPlan{words: words, tokens: toks, st: st}
			for _, t := range toks {
				n, err := cells.wordCount(stTok(st, t))
				if err != nil {
					return nil, err
				}
				p.counts += n
			}
			if p.counts == 0 {
				return &wordPlan{words: words, empty: true}, nil
			}
			if best == nil || p.counts < best.counts {
				best = p
			}
		}
	}
	if best != nil {
		best.checkText = len(words) > 1 || strings.IndexFunc(words[0], notAlnum) >= 0
	}
	return best, nil
}

// onlyToken reports whether the records that match spec are exactly those having one token, so that
// its counter is the total: one word of letters and digits that lies in one token only (the word itself,
// or a stem such as «insulin» of «insulina»: QueryWords).
func (p *wordPlan) onlyToken(spec *store.ListSpec) bool {
	return !p.checkText && len(p.tokens) == 1 && strings.Contains(p.tokens[0], p.words[0]) && !spec.Near &&
		spec.EmergencySlug == "" && spec.Type == "" && spec.Category == "" && spec.Urgency == "" && spec.SinceMillis() < 0
}

// scan yields the records that match spec (words, filters, since; not the radius), newest first, from
// after `from`, merging the posting lists of the driver's tokens.
func (p *wordPlan) scan(txn *badger.Txn, spec *store.ListSpec, f *filter, from *store.Cursor, yield func(*entry) bool) error {
	if p.empty {
		return nil
	}
	since := spec.SinceMillis()
	var fromInv []byte
	if from != nil {
		fromInv = invID(from.ID)
	}
	streams := make([]*postingStream, len(p.tokens))
	for i, tok := range p.tokens {
		streams[i] = newPostingStream(txn, wordPrefix(p.st, tok), fromInv)
		defer streams[i].close()
	}
	var last []byte
	for {
		best := -1
		var bestInv []byte
		for i, s := range streams {
			h := s.head()
			if h == nil {
				if s.err != nil {
					return s.err
				}
				continue
			}
			if best < 0 || bytes.Compare(h.inv, bestInv) < 0 {
				best, bestInv = i, h.inv
			}
		}
		if best < 0 {
			return nil
		}
		if bytes.Equal(bestInv, last) { // the same record under another token
			p.postings++
			streams[best].next()
			continue
		}
		if p.budget > 0 && p.read >= p.budget {
			p.spent = true
			return nil
		}
		p.read++
		p.postings++
		last = append(last[:0], bestInv...)
		id := idFromInv(bestInv)
		if since >= 0 && store.IDMillis(id) <= since {
			return nil
		}
		e, err := decodeSummary(id, streams[best].head().sum)
		if err != nil {
			return err
		}
		streams[best].next()
		if !f.matchCodes(e.typ, e.cat, e.urg) || (spec.EmergencySlug != "" && e.slug != spec.EmergencySlug) {
			continue
		}
		if p.checkText {
			match, err := textMatches(txn, id, p.words)
			if err != nil {
				return err
			}
			if !match {
				continue
			}
		}
		if !yield(&e) {
			return nil
		}
	}
}

func textMatches(txn *badger.Txn, id string, words []string) (match bool, err error) {
	item, err := txn.Get(append(slices.Clone(prefixText), id...))
	if err == nil {
		err = item.Value(func(v []byte) error { match = store.MatchText(string(textOf(v)), words); return nil })
	}
	return match, err
}

// nearest collects the matches within the radius and yields them nearest first, then newest first,
// from after `from`.
func (p *wordPlan) nearest(txn *badger.Txn, spec *store.ListSpec, f *filter, from *store.Cursor, yield func(*entry) bool) error {
	var hits []*entry
	err := p.scan(txn, spec, f, nil, func(e *entry) bool {
		if e.hasLoc {
			if e.dist = store.HaversineKm(spec.Lat, spec.Lon, e.lat, e.lon); e.dist <= spec.RadiusKm && after(from, e) {
				hits = append(hits, e)
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	slices.SortFunc(hits, func(a, b *entry) int {
		if a.dist != b.dist {
			if a.dist < b.dist {
				return -1
			}
			return 1
		}
		return strings.Compare(b.id, a.id)
	})
	for _, e := range hits {
		if !yield(e) {
			return nil
		}
	}
	return nil
}
