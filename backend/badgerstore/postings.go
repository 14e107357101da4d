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
// name it by wordPrefix(st, tok) + inv(id), and the writer files them in blocks of at most
// maxBlockPostings records,
//
//	wordPrefix(st, tok) + inv(id[:bucketLen]) + seq (8 bytes, big-endian)
//
// The bucket is an id's first bucketLen characters, its creation time to 256 ms; seq is drawn from the
// store's block sequence (blockSeqs) for every maxBlockPostings records a transaction writes, so two
// transactions never write one key, and a record's postings share one seq, kept before its folded text
// (prefixText). The records a batch publishes fall in one or two buckets, so a batch writes about one key
// per token it holds instead of one per record and token, and a bucket's blocks are all a read merges to
// yield its postings in order (the buckets themselves are in order: newest first).
//
// A record's posting is in exactly one block, the one its seq names. An update that changes a posting
// (the record's summary or text) rewrites the block of its seq that holds it, at most maxBlockPostings
// postings; one that changes the record's status moves every posting to the status's partition, in a
// block of a new seq: the old blocks are rewritten, the new ones need not be read. So no block holds a
// posting of a record that does not have it.
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
	maxBlockPostings = 16
	maxBlockBytes    = maxBlockPostings * (idLen + 2 + 22 + 64) // inverted id, length, summary with a slug of 64
)

// postingWriter gathers a transaction's word postings: those it adds and the stored blocks it removes
// postings from, by block key.
type postingWriter struct {
	adds      map[string]map[[idLen]byte][]byte // block key → inverted id → summary
	rewritten map[string][]posting              // block key → the postings the stored block keeps, sorted
	key       []byte                            // add's block key, built here: a string only for a new block
}

// blockKey is the key of the block of seq that holds posting k (wordEntries' key).
func blockKey(k []byte, seq uint64) string {
	return string(binary.BigEndian.AppendUint64(slices.Clone(postingGroup(k)), seq))
}

// add adds the posting k with summary sum to the block of seq.
func (w *postingWriter) add(k, sum []byte, seq uint64) {
	if w.adds == nil {
		w.adds = map[string]map[[idLen]byte][]byte{}
	}
	// The block's key (blockKey's), in the writer's buffer: map lookups of string(w.key) allocate nothing.
	w.key = binary.BigEndian.AppendUint64(append(w.key[:0], postingGroup(k)...), seq)
	if ps, ok := w.rewritten[string(w.key)]; ok { // an update of this transaction made the block already
		w.rewritten[string(w.key)] = withPosting(ps, posting{inv: slices.Clone(k[len(k)-idLen:]), sum: sum})
		return
	}
	b := w.adds[string(w.key)]
	if b == nil {
		b = map[[idLen]byte][]byte{}
		w.adds[string(w.key)] = b
	}
	b[[idLen]byte(k[len(k)-idLen:])] = sum
}

// stored returns the postings of the stored block bk as this transaction leaves them, reading it the
// first time (none when there is no such block).
func (w *postingWriter) stored(txn *badger.Txn, bk string) ([]posting, error) {
	if ps, ok := w.rewritten[bk]; ok {
		return ps, nil
	}
	var ps []posting
	item, err := txn.Get([]byte(bk))
	switch {
	case err == nil:
		if err := item.Value(func(v []byte) error {
			var err error
			ps, err = decodeBlock(nil, []byte(bk), v)
			return err
		}); err != nil {
			return nil, fmt.Errorf("word block: %w", err)
		}
	case !errors.Is(err, badger.ErrKeyNotFound):
		return nil, err
	}
	if w.rewritten == nil {
		w.rewritten = map[string][]posting{}
	}
	w.rewritten[bk] = ps
	return ps, nil
}

// findInv finds inv among sorted postings: its index, or where it would go.
func findInv(ps []posting, inv []byte) (int, bool) {
	return slices.BinarySearchFunc(ps, inv, func(p posting, inv []byte) int { return bytes.Compare(p.inv, inv) })
}

// withPosting puts p into sorted postings, in place of the one of its record if there is one.
func withPosting(ps []posting, p posting) []posting {
	i, ok := findInv(ps, p.inv)
	if ok {
		ps[i] = p
		return ps
	}
	return slices.Insert(ps, i, p)
}

// remove removes the posting k from the block of seq: from this transaction's additions, or from the
// stored block, which is then rewritten. A posting that is not there is gone already, as deleting a
// missing key is no error (Verify reports an index that lacks a posting; an update must not stop the
// store for it).
func (w *postingWriter) remove(txn *badger.Txn, k []byte, seq uint64) error {
	bk, inv := blockKey(k, seq), k[len(k)-idLen:]
	if b := w.adds[bk]; b != nil {
		delete(b, [idLen]byte(inv))
		return nil
	}
	ps, err := w.stored(txn, bk)
	if err != nil {
		return err
	}
	if i, ok := findInv(ps, inv); ok {
		w.rewritten[bk] = slices.Delete(ps, i, i+1)
	}
	return nil
}

// put puts the posting k with summary sum into the block of seq, stored or not: an updated record's
// postings stay in the blocks of its seq.
func (w *postingWriter) put(txn *badger.Txn, k, sum []byte, seq uint64) error {
	bk, inv := blockKey(k, seq), k[len(k)-idLen:]
	if b := w.adds[bk]; b != nil {
		b[[idLen]byte(inv)] = sum
		return nil
	}
	ps, err := w.stored(txn, bk)
	if err != nil {
		return err
	}
	w.rewritten[bk] = withPosting(ps, posting{inv: slices.Clone(inv), sum: sum})
	return nil
}

// flush writes the gathered blocks into txn: the rewritten ones (deleted when empty) and the new ones.
func (w *postingWriter) flush(txn *badger.Txn) error {
	for key, ps := range w.rewritten {
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
	var ps []posting
	for key, adds := range w.adds {
		if len(adds) == 0 {
			continue
		}
		ps = ps[:0]
		invs := make([]byte, 0, len(adds)*idLen) // the block's ids, one allocation
		for inv, sum := range adds {
			invs = append(invs, inv[:]...)
			ps = append(ps, posting{inv: invs[len(invs)-idLen : len(invs) : len(invs)], sum: sum})
		}
		slices.SortFunc(ps, byInv)
		v, err := encodeBlock(ps)
		if err == nil {
			err = txn.Set([]byte(key), v)
		}
		if err != nil {
			return err
		}
	}
	w.adds, w.rewritten = nil, nil
	return nil
}

// textSeq is the seq of a record's word blocks in its text entry's value; textOf is its folded text.
func textSeq(v []byte) uint64 {
	if len(v) < blockSeqLen {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func textOf(v []byte) []byte {
	if len(v) < blockSeqLen {
		return nil
	}
	return v[blockSeqLen:]
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
	n, err := b.seq.Next()
	if n == 0 && err == nil { // 0 stays "none" (a text entry without a seq, the writer's fresh state)
		n, err = b.seq.Next()
	}
	return n, err
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
		p.i, _ = findInv(p.buf, p.from)
		for p.i < len(p.buf) && bytes.Equal(p.buf[p.i].inv, p.from) {
			p.i++
		}
	}
	return true
}

// postingReader looks postings up in the block their record's seq names, reading each block once. Verify
// reads the records in id order, so the blocks come bucket by bucket: it keeps one bucket's.
type postingReader struct {
	txn    *badger.Txn
	bucket string
	blocks map[string]map[[idLen]byte][]byte
}

func (r *postingReader) get(k []byte, seq uint64) (sum []byte, ok bool, err error) {
	if b := string(postingGroup(k)[len(postingGroup(k))-bucketLen:]); b != r.bucket {
		r.bucket, r.blocks = b, map[string]map[[idLen]byte][]byte{}
	}
	bk := blockKey(k, seq)
	ps, loaded := r.blocks[bk]
	if !loaded {
		ps = map[[idLen]byte][]byte{}
		item, err := r.txn.Get([]byte(bk))
		switch {
		case err == nil:
			err = item.Value(func(v []byte) error {
				bl, err := decodeBlock(nil, []byte(bk), v)
				for _, p := range bl {
					ps[[idLen]byte(p.inv)] = p.sum
				}
				return err
			})
			if err != nil {
				return nil, false, fmt.Errorf("word block: %w", err)
			}
		case !errors.Is(err, badger.ErrKeyNotFound):
			return nil, false, err
		}
		r.blocks[bk] = ps
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
