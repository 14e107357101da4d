package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// Word postings are stored in blocks, not one key per record and token: a record's postings (wordEntries)
// name it by wordPrefix(st, tok) + inv(id), and a transaction writes the postings it adds for one token,
// status and bucket in one block,
//
//	wordPrefix(st, tok) + inv(id[:bucketLen]) + seq (8 bytes, big-endian)
//
// whose value is the postings, newest first, each its inverted id, the uvarint length of its summary and
// the summary. The bucket is an id's first bucketLen characters, its creation time to 256 ms: the
// records a batch publishes fall in one or two buckets, so a batch writes about one key per token it
// holds instead of one per record and token, and a bucket's blocks are all a read merges to yield its
// postings in order (the buckets themselves are in order: newest first). seq is the store's block
// sequence (blockSeq), so that two transactions never write one key.
//
// A record's posting is in exactly one block. Removing it (an update that moves the record to another
// status, changes its summary or its text) rewrites the block that holds it, found among its group's (its
// token, status and bucket): so no block holds a posting of a record that does not have it, and a block,
// at most maxBlockPostings, bounds what a removal rewrites.
const (
	bucketLen   = 8 // an id's first 8 characters: 40 bits, its Unix milliseconds to 256 ms
	blockSeqLen = 8
)

var keyBlockSeq = []byte("m\x00blockseq") // Badger's sequence of word blocks (blockSeqs)

// postingGroup is the key of a posting's group (its block key without seq), from a posting key.
func postingGroup(k []byte) []byte { return k[:len(k)-idLen+bucketLen] }

// posting is one record's posting in a block.
type posting struct {
	inv, sum []byte
}

// A block's value: its slugs (a uvarint count, then each as a uvarint length and its bytes), then its
// postings, each the last 8 bytes of its inverted id (the first 8 are the bucket, in the key), the
// uvarint length of its summary without the slug, that part, and the uvarint index of its slug. Within a
// block, most postings are of one emergency: its slug is written once.
func encodeBlock(ps []posting) ([]byte, error) {
	var slugs []string
	idx := map[string]uint64{}
	n := binary.MaxVarintLen16
	for _, p := range ps {
		_, slug, ok := splitSummary(p.sum)
		if !ok {
			return nil, fmt.Errorf("word block: bad summary of %s", idFromInv(p.inv))
		}
		if _, seen := idx[string(slug)]; !seen {
			idx[string(slug)] = uint64(len(slugs))
			slugs = append(slugs, string(slug))
			n += 1 + len(slug)
		}
		n += idLen - bucketLen + 2 + len(p.sum)
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(slugs)))
	for _, sl := range slugs {
		b = append(binary.AppendUvarint(b, uint64(len(sl))), sl...)
	}
	for _, p := range ps {
		head, slug, _ := splitSummary(p.sum)
		b = append(b, p.inv[bucketLen:]...)
		b = append(binary.AppendUvarint(b, uint64(len(head))), head...)
		b = binary.AppendUvarint(b, idx[string(slug)])
	}
	return b, nil
}

// splitSummary cuts a summary (summaryOf) before its slug's length.
func splitSummary(sum []byte) (head, slug []byte, ok bool) {
	if len(sum) < 6 {
		return nil, nil, false
	}
	i := 5
	if sum[4] == 1 {
		i = 21
	}
	if len(sum) <= i || int(sum[i]) != len(sum)-i-1 {
		return nil, nil, false
	}
	return sum[:i], sum[i+1:], true
}

var errBadBlock = errors.New("bad word block")

// decodeBlock appends the postings of block key's value v to ps.
func decodeBlock(ps []posting, key, v []byte) ([]posting, error) {
	bucket := key[len(key)-blockSeqLen-bucketLen : len(key)-blockSeqLen]
	uv := func() (uint64, bool) {
		x, m := binary.Uvarint(v)
		if m <= 0 {
			return 0, false
		}
		v = v[m:]
		return x, true
	}
	ns, ok := uv()
	if !ok || ns > uint64(len(v)) {
		return ps, errBadBlock
	}
	slugs := make([][]byte, ns)
	for i := range slugs {
		l, ok := uv()
		if !ok || l > uint64(len(v)) {
			return ps, errBadBlock
		}
		slugs[i], v = v[:l], v[l:]
	}
	var buf []byte // the postings' ids and summaries, one allocation as it grows
	for len(v) > 0 {
		if len(v) < idLen-bucketLen+1 {
			return ps, errBadBlock
		}
		suffix := v[:idLen-bucketLen]
		v = v[idLen-bucketLen:]
		l, ok := uv()
		if !ok || l > uint64(len(v)) {
			return ps, errBadBlock
		}
		head := v[:l]
		v = v[l:]
		si, ok := uv()
		if !ok || si >= ns {
			return ps, errBadBlock
		}
		start := len(buf)
		buf = append(append(buf, bucket...), suffix...)
		buf = append(append(append(buf, head...), byte(len(slugs[si]))), slugs[si]...)
		ps = append(ps, posting{inv: buf[start : start+idLen : start+idLen], sum: buf[start+idLen : len(buf) : len(buf)]})
	}
	return ps, nil
}

func byInv(a, b posting) int { return bytes.Compare(a.inv, b.inv) }

// maxBlockPostings bounds a block, so that removing a posting rewrites at most that many (maxBlockBytes).
const (
	maxBlockPostings = 64
	maxBlockBytes    = maxBlockPostings * (idLen + 2 + 22 + 64) // inverted id, length, summary with a slug of 64
)

// postingWriter gathers a transaction's word postings: those it adds, by group, and the stored blocks it
// removes postings from, by key.
type postingWriter struct {
	adds      map[string]map[[idLen]byte][]byte // group → inverted id → summary
	rewritten map[string]map[string][]posting   // group → block key → the postings it keeps, sorted
}

// add adds the posting k (wordEntries' key) with summary sum.
func (w *postingWriter) add(k, sum []byte) {
	if w.adds == nil {
		w.adds = map[string]map[[idLen]byte][]byte{}
	}
	g := w.adds[string(postingGroup(k))]
	if g == nil {
		g = map[[idLen]byte][]byte{}
		w.adds[string(postingGroup(k))] = g
	}
	g[[idLen]byte(k[len(k)-idLen:])] = sum
}

// remove removes the posting k: from this transaction's additions, or from the stored block that holds
// it, which is then rewritten.
func (w *postingWriter) remove(txn *badger.Txn, k []byte) error {
	g, inv := postingGroup(k), k[len(k)-idLen:]
	if adds := w.adds[string(g)]; adds != nil {
		if _, ok := adds[[idLen]byte(inv)]; ok {
			delete(adds, [idLen]byte(inv))
			return nil
		}
	}
	found := func(ps []posting) int {
		i, ok := slices.BinarySearchFunc(ps, inv, func(p posting, inv []byte) int { return bytes.Compare(p.inv, inv) })
		if !ok {
			return -1
		}
		return i
	}
	blocks := w.rewritten[string(g)]
	for key, ps := range blocks {
		if i := found(ps); i >= 0 {
			blocks[key] = slices.Delete(ps, i, i+1)
			return nil
		}
	}
	err := groupBlocks(txn, g, func(key []byte, ps []posting) error {
		if _, done := blocks[string(key)]; done {
			return nil
		}
		i := found(ps)
		if i < 0 {
			return nil
		}
		kept := slices.Delete(slices.Clone(ps), i, i+1) // decodeBlock's postings are copies of the value
		if blocks == nil {
			if w.rewritten == nil {
				w.rewritten = map[string]map[string][]posting{}
			}
			blocks = map[string][]posting{}
			w.rewritten[string(g)] = blocks
		}
		blocks[string(key)] = kept
		return errFound
	})
	if errors.Is(err, errFound) {
		return nil
	}
	// Not found: the posting is gone already, as deleting a missing key is no error (Verify reports
	// an index that lacks a posting; an update must not stop the store for it).
	return err
}

var errFound = errors.New("found")

// groupBlocks calls fn with each block of group g and its postings (valid during the call only), until fn
// returns an error.
func groupBlocks(txn *badger.Txn, g []byte, fn func(key []byte, ps []posting) error) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: g})
	defer it.Close()
	var ps []posting
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if len(item.Key()) != len(g)+blockSeqLen {
			continue
		}
		err := item.Value(func(v []byte) error {
			var err error
			if ps, err = decodeBlock(ps[:0], item.Key(), v); err != nil {
				return fmt.Errorf("word block: %w", err)
			}
			return fn(item.Key(), ps)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// flush writes the gathered postings into txn: the rewritten blocks under their keys (deleted when
// empty), the added ones in new blocks of at most maxBlockPostings, each under a seq from next.
func (w *postingWriter) flush(txn *badger.Txn, next func() (uint64, error)) error {
	for _, blocks := range w.rewritten {
		for key, ps := range blocks {
			if len(ps) == 0 {
				if err := txn.Delete([]byte(key)); err != nil {
					return err
				}
				continue
			}
			v, err := encodeBlock(ps)
			if err == nil {
				err = txn.Set([]byte(key), v)
			}
			if err != nil {
				return err
			}
		}
	}
	var ps []posting
	for g, adds := range w.adds {
		ps = ps[:0]
		for inv, sum := range adds {
			ps = append(ps, posting{inv: slices.Clone(inv[:]), sum: sum})
		}
		slices.SortFunc(ps, byInv)
		for chunk := range slices.Chunk(ps, maxBlockPostings) {
			seq, err := next()
			if err != nil {
				return err
			}
			v, err := encodeBlock(chunk)
			if err == nil {
				err = txn.Set(binary.BigEndian.AppendUint64([]byte(g), seq), v)
			}
			if err != nil {
				return err
			}
		}
	}
	w.adds, w.rewritten = nil, nil
	return nil
}

// blockSeqs hands out the block sequence, from Badger's sequence (leased 1,000 at a time, so a restart
// skips at most that many and never repeats one).
type blockSeqs struct {
	mu  sync.Mutex
	seq *badger.Sequence
}

func (b *blockSeqs) next(db *badger.DB) (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seq == nil {
		seq, err := db.GetSequence(keyBlockSeq, 1000)
		if err != nil {
			return 0, fmt.Errorf("word block sequence: %w", err)
		}
		b.seq = seq
	}
	return b.seq.Next()
}

func (b *blockSeqs) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seq != nil {
		_ = b.seq.Release()
		b.seq = nil
	}
}

// postingStream yields one token's postings of a status newest first: bucket by bucket, merging the
// blocks of each.
type postingStream struct {
	it     *badger.Iterator
	prefix []byte // wordPrefix(st, tok)
	from   []byte // yield only postings after this inverted id (nil: from the newest)
	buf    []posting
	i      int
	err    error
}

func newPostingStream(txn *badger.Txn, prefix, fromInv []byte) *postingStream {
	p := &postingStream{it: txn.NewIterator(badger.IteratorOptions{Prefix: prefix}), prefix: prefix, from: fromInv}
	seek := prefix
	if fromInv != nil {
		seek = append(slices.Clone(prefix), fromInv[:min(bucketLen, len(fromInv))]...)
	}
	p.it.Seek(seek)
	return p
}

func (p *postingStream) close() { p.it.Close() }

// head is the next posting, nil at the end or on an error (p.err).
func (p *postingStream) head() *posting {
	for p.i >= len(p.buf) {
		if !p.fill() {
			return nil
		}
	}
	return &p.buf[p.i]
}

func (p *postingStream) next() { p.i++ }

// fill reads the next bucket's blocks into buf, sorted, without the postings up to p.from.
func (p *postingStream) fill() bool {
	p.buf, p.i = p.buf[:0], 0
	var bucket []byte
	for ; p.it.Valid(); p.it.Next() {
		item := p.it.Item()
		k := item.Key()
		if len(k) != len(p.prefix)+bucketLen+blockSeqLen {
			continue // another token's key that starts with this one and 0x00 cannot be: see wordPrefix
		}
		b := k[len(p.prefix) : len(p.prefix)+bucketLen]
		if bucket == nil {
			bucket = slices.Clone(b)
		} else if !bytes.Equal(b, bucket) {
			break
		}
		err := item.Value(func(v []byte) error {
			var err error
			p.buf, err = decodeBlock(p.buf, k, v)
			return err
		})
		if err != nil {
			p.err = fmt.Errorf("word block: %w", err)
			return false
		}
	}
	if bucket == nil {
		return false
	}
	slices.SortFunc(p.buf, byInv)
	if p.from != nil {
		p.i, _ = slices.BinarySearchFunc(p.buf, p.from, func(a posting, inv []byte) int { return bytes.Compare(a.inv, inv) })
		for p.i < len(p.buf) && bytes.Equal(p.buf[p.i].inv, p.from) {
			p.i++
		}
	}
	return true
}

// postingReader looks postings up by their key (wordEntries'), reading each group's blocks once. Verify
// reads the records in id order, so the groups come bucket by bucket: it keeps one bucket's.
type postingReader struct {
	txn    *badger.Txn
	bucket string
	groups map[string]map[[idLen]byte][]byte
}

func (r *postingReader) get(k []byte) (sum []byte, ok bool, err error) {
	g := postingGroup(k)
	if b := string(g[len(g)-bucketLen:]); b != r.bucket {
		r.bucket, r.groups = b, map[string]map[[idLen]byte][]byte{}
	}
	ps, loaded := r.groups[string(g)]
	if !loaded {
		ps = map[[idLen]byte][]byte{}
		err := groupBlocks(r.txn, g, func(_ []byte, bl []posting) error {
			for _, p := range bl {
				ps[[idLen]byte(p.inv)] = p.sum
			}
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		r.groups[string(g)] = ps
	}
	sum, ok = ps[[idLen]byte(k[len(k)-idLen:])]
	return sum, ok, nil
}

// countPostings counts the postings of every block.
func countPostings(txn *badger.Txn) (int, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixWord})
	defer it.Close()
	n := 0
	var ps []posting
	for it.Rewind(); it.Valid(); it.Next() {
		err := it.Item().Value(func(v []byte) error {
			var err error
			ps, err = decodeBlock(ps[:0], it.Item().Key(), v)
			return err
		})
		if err != nil {
			return n, fmt.Errorf("word block: %w", err)
		}
		n += len(ps)
	}
	return n, nil
}
