package badgerstore

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"

	"github.com/directaid/directaid/backend/store"
)

// Backups. Backup streams ONE read snapshot of the database: every live key of a single read-only
// Badger transaction, in key order, so that a record, its pair key, its index entries and the counters
// are in the backup as one commit left them. It takes no lock that a writer takes: publications go on
// however slowly the client reads. (Badger's own DB.Backup reads each key range in a transaction of its
// own in non-managed mode, and NewStreamAt, which would fix the read timestamp, exists only in managed
// mode.) While the client reads, the iterator is closed: it is opened again for each frame at the
// snapshot's read timestamp, so that a slow client pins no memtable or table, only the versions the
// snapshot reads (Badger's discard timestamp waits for the transaction).
//
// The format (version 1); integers are big-endian:
//
//	header   "directaid backup" (16 bytes), version (1 byte)
//	frames   kind (1 byte: 'd' data, 't' trailer), length (4 bytes), payload (length bytes),
//	         CRC-32C (Castagnoli) of kind, length and payload (4 bytes)
//	data     entries, each uvarint(len(key)) key uvarint(len(value)) value uvarint(version)
//	trailer  data frames (8 bytes), keys (8), bytes before the trailer (8), SHA-256 of those bytes (32);
//	         nothing may follow it
//
// A backup that does not begin with the magic is in Badger's own format (DB.Backup: what directaid wrote
// before version 1): Restore loads it and says that it carries no checksum.
const (
	backupMagic   = "directaid backup"
	backupVersion = 1
	frameData     = 'd'
	frameTrailer  = 't'
	frameHead     = 5        // kind and length
	frameTarget   = 64 << 10 // a data frame ends with the entry that takes it past this
	frameMax      = 16 << 20 // longer is damage (an entry is under Badger's 1 MB value limit here)
	trailerLen    = 3*8 + sha256.Size
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errErasureWaits defers the erasure rewrite (erase.go) while a backup reads versions older than it:
// Badger keeps every version a read transaction may see, so the rewrite would leave the erased ones.
var errErasureWaits = errors.New("erasure: deferred to the next cycle: a backup in progress reads versions from before it")

// backupState is the backups in progress.
type backupState struct {
	mu sync.Mutex
	ts []uint64 // their read timestamps
	// reading is held (read) while a backup reads Badger, never while it writes to its client. Close
	// takes it for good: Badger closes between those reads, and later ones find the store closed.
	reading sync.RWMutex
}

// Backup implements store.Backupper: a full, consistent backup of one snapshot, taken while the store
// serves, with checksums (see the top of this file). Restore reads it.
func (s *Store) Backup(w io.Writer) error {
	txn, err := s.beginBackup()
	if err != nil {
		return err
	}
	defer s.endBackup(txn)
	bw := &backupWriter{w: w, sum: sha256.New()}
	if err := bw.header(); err != nil {
		return err
	}
	var from []byte // the first key of the next frame (nil: the first key)
	buf := make([]byte, frameHead, frameHead+frameTarget+4<<10)
	for {
		var n int
		if buf, from, n, err = s.readFrame(txn, from, buf[:frameHead]); err != nil {
			return err
		}
		if n == 0 {
			return bw.trailer()
		}
		if err := bw.data(buf, n); err != nil {
			return err
		}
	}
}

// startReading takes backups.reading for a read of Badger; false once Close has it (or waits for it).
func (s *Store) startReading() bool { return s.backups.reading.TryRLock() }

// beginBackup opens the backup's read transaction and registers its read timestamp.
func (s *Store) beginBackup() (*badger.Txn, error) {
	if !s.startReading() {
		return nil, store.ErrClosed
	}
	defer s.backups.reading.RUnlock()
	s.backups.mu.Lock()
	defer s.backups.mu.Unlock()
	txn := s.db.NewTransaction(false)
	s.backups.ts = append(s.backups.ts, txn.ReadTs())
	return txn, nil
}

func (s *Store) endBackup(txn *badger.Txn) {
	s.backups.mu.Lock()
	if i := slices.Index(s.backups.ts, txn.ReadTs()); i >= 0 {
		s.backups.ts = slices.Delete(s.backups.ts, i, i+1)
	}
	s.backups.mu.Unlock()
	if s.startReading() { // once closed, Badger's oracle no longer takes the mark
		txn.Discard()
		s.backups.reading.RUnlock()
	}
}

// backupBefore says whether a backup in progress reads at a timestamp below ts.
func (s *Store) backupBefore(ts uint64) bool {
	s.backups.mu.Lock()
	defer s.backups.mu.Unlock()
	return slices.ContainsFunc(s.backups.ts, func(b uint64) bool { return b < ts })
}

// readFrame appends to buf the entries of txn from the key from on, until the frame is full, and
// returns it with the first key of the next frame and how many entries it took (0 at the end).
func (s *Store) readFrame(txn *badger.Txn, from, buf []byte) ([]byte, []byte, int, error) {
	if !s.startReading() {
		return buf, nil, 0, store.ErrClosed
	}
	defer s.backups.reading.RUnlock()
	it := txn.NewIterator(badger.IteratorOptions{}) // values stay in the LSM tree: nothing to prefetch
	defer it.Close()
	n := 0
	var next []byte
	for it.Seek(from); it.Valid() && len(buf) < frameHead+frameTarget; it.Next() {
		item := it.Item()
		k := item.Key()
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		err := item.Value(func(v []byte) error {
			buf = binary.AppendUvarint(buf, uint64(len(v)))
			buf = append(buf, v...)
			return nil
		})
		if err != nil {
			return buf, nil, 0, fmt.Errorf("backup: read %s: %w", describeKey(k), err)
		}
		buf = binary.AppendUvarint(buf, item.Version())
		next = append(append(next[:0], k...), 0) // the smallest key after k
		n++
	}
	return buf, next, n, nil
}

// backupWriter writes the header, the frames and the trailer, summing what it writes.
type backupWriter struct {
	w                   io.Writer
	sum                 hash.Hash
	frames, keys, bytes uint64
}

func (b *backupWriter) write(p []byte) error {
	b.sum.Write(p)
	b.bytes += uint64(len(p))
	_, err := b.w.Write(p)
	return err
}

func (b *backupWriter) header() error {
	return b.write(append([]byte(backupMagic), backupVersion))
}

// seal fills in the frame's kind and length (buf begins with frameHead bytes for them) and appends
// its CRC.
func seal(kind byte, buf []byte) []byte {
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:frameHead], uint32(len(buf)-frameHead))
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, crcTable))
}

// data writes buf (frameHead bytes, then n entries) as a data frame.
func (b *backupWriter) data(buf []byte, n int) error {
	b.frames++
	b.keys += uint64(n)
	return b.write(seal(frameData, buf))
}

func (b *backupWriter) trailer() error {
	t := make([]byte, frameHead, frameHead+trailerLen+4)
	t = binary.BigEndian.AppendUint64(t, b.frames)
	t = binary.BigEndian.AppendUint64(t, b.keys)
	t = binary.BigEndian.AppendUint64(t, b.bytes)
	t = b.sum.Sum(t)
	_, err := b.w.Write(seal(frameTrailer, t))
	return err
}

// BackupInfo is what Restore found in a backup.
type BackupInfo struct {
	// Checksummed is false for a backup in Badger's own format (written before backups had checksums):
	// its content could not be checked.
	Checksummed bool
	Frames      int64
	Keys        int64
	Bytes       int64  // the file's length
	SHA256      string // hex, of everything before the trailer (as the trailer gives it)
}

// Summary is one line for the operator.
func (b BackupInfo) Summary() string {
	if !b.Checksummed {
		return "no checksum: a backup in the format before checksums (Badger's own); its content cannot be checked, only that it restores"
	}
	return fmt.Sprintf("checksums verified: %d keys in %d frames, %d bytes, content SHA-256 %s", b.Keys, b.Frames, b.Bytes, b.SHA256)
}

// Restore loads a backup made by Backup (or by DB.Backup, the format before checksums) into dir, which
// must be empty (or absent) and not in use. A checksummed backup is checked as it loads: any changed
// byte, a cut or an addition fails with where it is. On failure dir is left as it was found (empty or
// absent), so that a damaged backup never passes for a database.
func Restore(dir string, r io.Reader) (BackupInfo, error) {
	return restore(dir, r, &restoreSpace{})
}

// restore is Restore with the free space watched by space (its dir and keep are set here).
func restore(dir string, r io.Reader, space *restoreSpace) (BackupInfo, error) {
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return BackupInfo{}, fmt.Errorf("%s is not empty: restore into a new directory", dir)
	}
	existed := err == nil
	br := bufio.NewReaderSize(r, 1<<20)
	head, _ := br.Peek(len(backupMagic))
	info := BackupInfo{Checksummed: string(head) == backupMagic}
	switch {
	case len(head) == 0:
		return info, errors.New("the backup is empty")
	case !info.Checksummed && len(head) < len(backupMagic) && backupMagic[:len(head)] == string(head):
		return info, fmt.Errorf("the backup is truncated: it ends at byte %d, inside its header", len(head))
	}
	// The server's own options (a restore writes the database the server then opens), without a sync a
	// write: Close syncs. Badger's defaults would map five 128 MiB memtable files at once.
	opts := badgerOptions(Options{Dir: dir}).WithSyncWrites(false)
	space.dir, space.keep = dir, openSpace(opts)
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			space.size = st.Size()
		}
	}
	if err := space.check(0); err != nil {
		return info, err
	}
	db, err := badger.Open(opts)
	if err != nil {
		return info, err
	}
	if info.Checksummed {
		err = loadBackup(db, br, &info, space)
	} else if err = db.Load(br, 256); err != nil {
		err = fmt.Errorf("load backup (the format before checksums): %w", err)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if existed {
			if entries, rerr := os.ReadDir(dir); rerr == nil {
				for _, e := range entries {
					_ = os.RemoveAll(filepath.Join(dir, e.Name()))
				}
			}
		} else {
			_ = os.RemoveAll(dir)
		}
		return info, err
	}
	return info, nil
}

// backupReader reads frames, checking them, and sums what it reads.
type backupReader struct {
	r      *bufio.Reader
	sum    hash.Hash
	off    int64 // bytes read
	frames int64 // data frames read
	keys   int64
}

// full reads len(p) bytes; io.ErrUnexpectedEOF when the file ends first, io.EOF when it ends before p.
func (b *backupReader) full(p []byte) error {
	n, err := io.ReadFull(b.r, p)
	b.off += int64(n)
	return err
}

// frame reads the next frame and checks its CRC. Its error says which frame, where, and what it holds.
func (b *backupReader) frame() (kind byte, payload []byte, err error) {
	start := b.off
	n := b.frames + 1
	head := make([]byte, frameHead)
	if err := b.full(head); errors.Is(err, io.EOF) {
		return 0, nil, fmt.Errorf("the backup is truncated: it ends at byte %d, after frame %d, without its trailer", b.off, b.frames)
	} else if err != nil {
		return 0, nil, b.cut(n, start, err)
	}
	kind, size := head[0], binary.BigEndian.Uint32(head[1:])
	if kind != frameData && kind != frameTrailer || size > frameMax {
		return 0, nil, fmt.Errorf("frame %d at byte %d: its header is damaged (kind %q, length %d)", n, start, kind, size)
	}
	buf := make([]byte, frameHead+int(size)+4)
	copy(buf, head)
	if err := b.full(buf[frameHead:]); errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return 0, nil, fmt.Errorf("the backup is truncated, or frame %d's length damaged: it ends at byte %d, inside frame %d (which begins at byte %d and has %d bytes)",
			n, b.off, n, start, len(buf))
	} else if err != nil {
		return 0, nil, b.cut(n, start, err)
	}
	body, sum := buf[:len(buf)-4], binary.BigEndian.Uint32(buf[len(buf)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		what := "the trailer"
		if kind == frameData {
			what = frameKeys(body[frameHead:])
		}
		return 0, nil, fmt.Errorf("frame %d (bytes %d to %d, %s): checksum mismatch: the backup was changed or damaged after it was written",
			n, start, b.off-1, what)
	}
	if kind == frameData {
		b.sum.Write(buf)
	}
	return kind, body[frameHead:], nil
}

func (b *backupReader) cut(n, start int64, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("the backup is truncated: it ends at byte %d, inside frame %d (which begins at byte %d)", b.off, n, start)
	}
	return fmt.Errorf("frame %d at byte %d: %w", n, start, err)
}

// loadBackup checks and loads a checksummed backup (its magic not yet read) into db.
func loadBackup(db *badger.DB, r *bufio.Reader, info *BackupInfo, space *restoreSpace) error {
	b := &backupReader{r: r, sum: sha256.New()}
	header := make([]byte, len(backupMagic)+1)
	if err := b.full(header); err != nil {
		return fmt.Errorf("the backup is truncated: it ends at byte %d, inside its header", b.off)
	}
	b.sum.Write(header)
	if v := header[len(backupMagic)]; v != backupVersion {
		return fmt.Errorf("backup format version %d: this directaid reads version %d", v, backupVersion)
	}
	ldr := db.NewKVLoader(256)
	for {
		kind, payload, err := b.frame()
		if err == nil && kind == frameTrailer {
			err = b.trailer(payload, info)
		}
		if err == nil && kind == frameData {
			err = b.load(ldr, payload)
		}
		if err == nil {
			err = space.check(b.off)
		}
		if err != nil {
			_ = ldr.Finish() // let the writes already sent end before the database closes
			return err
		}
		if kind == frameTrailer {
			return ldr.Finish()
		}
	}
}

// load sends a checked data frame's entries to ldr.
func (b *backupReader) load(ldr *badger.KVLoader, payload []byte) error {
	b.frames++
	for len(payload) > 0 {
		var kv pb.KV
		var ok bool
		if kv.Key, kv.Value, kv.Version, payload, ok = nextEntry(payload); !ok {
			return fmt.Errorf("frame %d: entry %d is malformed (its checksum matched: the backup was written wrong)", b.frames, b.keys+1)
		}
		if err := ldr.Set(&kv); err != nil {
			return err
		}
		b.keys++
	}
	return nil
}

// trailer checks the trailer's counts and SHA-256 against what was read, and that nothing follows.
func (b *backupReader) trailer(t []byte, info *BackupInfo) error {
	if len(t) != trailerLen {
		return fmt.Errorf("the trailer at byte %d has %d bytes, not %d", b.off-int64(len(t))-frameHead-4, len(t), trailerLen)
	}
	frames, keys, size := binary.BigEndian.Uint64(t), binary.BigEndian.Uint64(t[8:]), binary.BigEndian.Uint64(t[16:])
	read := uint64(b.off) - uint64(frameHead+len(t)+4)
	if frames != uint64(b.frames) || keys != uint64(b.keys) || size != read {
		return fmt.Errorf("the trailer counts %d frames, %d keys and %d bytes; the backup has %d, %d and %d: frames were removed or added",
			frames, keys, size, b.frames, b.keys, read)
	}
	if got := b.sum.Sum(nil); !bytes.Equal(got, t[24:]) {
		return fmt.Errorf("the content's SHA-256 %x differs from the trailer's %x: frames were changed, moved or replaced", got, t[24:])
	}
	if _, err := b.r.Peek(1); err != io.EOF {
		return fmt.Errorf("bytes follow the trailer (from byte %d): the backup was changed after it was written", b.off)
	}
	info.Frames, info.Keys, info.Bytes, info.SHA256 = b.frames, b.keys, b.off, hex.EncodeToString(t[24:])
	return nil
}

// nextEntry decodes the entry at the start of p.
func nextEntry(p []byte) (key, value []byte, version uint64, rest []byte, ok bool) {
	field := func() []byte {
		n, w := binary.Uvarint(p)
		if w <= 0 || n > uint64(len(p)-w) {
			ok = false
			return nil
		}
		f := p[w : w+int(n)]
		p = p[w+int(n):]
		return f
	}
	ok = true
	key = field()
	if ok {
		value = field()
	}
	if !ok {
		return nil, nil, 0, nil, false
	}
	version, w := binary.Uvarint(p)
	if w <= 0 {
		return nil, nil, 0, nil, false
	}
	return key, value, version, p[w:], true
}

// frameKeys says which keys a damaged data frame holds, as far as its entries still decode.
func frameKeys(p []byte) string {
	var first, last []byte
	for len(p) > 0 {
		k, _, _, rest, ok := nextEntry(p)
		if !ok {
			break
		}
		if first == nil {
			first = k
		}
		last, p = k, rest
	}
	if first == nil {
		return "its entries unreadable"
	}
	return fmt.Sprintf("keys from %s to %s", describeKey(first), describeKey(last))
}

// describeKey names a key for an operator: the record's id, or the kind of entry and the key quoted.
func describeKey(k []byte) string {
	if id, ok := bytes.CutPrefix(k, prefixRecord); ok {
		return "record " + string(id)
	}
	return fmt.Sprintf("%s key %q", keyKind(k), k)
}

// restoreSpace keeps a restore from filling its disk: Badger writes its memtables and tables through
// memory mappings, and on a full disk the first write into such a page kills the process (SIGBUS) and
// leaves a half-written database. Before opening, the disk must have room for the backup's size (when
// the backup is a file; a database takes about what its backup holds, or less) and what opening takes
// (openSpace); while loading, every checkEvery bytes read, at least openSpace must stay free.
type restoreSpace struct {
	dir     string
	keep    int64 // openSpace: what must stay free
	size    int64 // the backup file's size, 0 when unknown
	checked int64 // bytes read at the last check
	every   int64 // bytes read between two checks (0: restoreCheckEvery)
	free    func(string) (int64, error)
}

// restoreCheckEvery is how many bytes of a backup a restore reads between two looks at the free space.
const restoreCheckEvery = 4 << 20

// check looks at the free space of the disk when read (the bytes of the backup read so far) is 0 or
// restoreCheckEvery past the last look: ErrNoSpaceToOpen, with the figures, when there is too little.
func (s *restoreSpace) check(read int64) error {
	if read != 0 && read-s.checked < cmp.Or(s.every, restoreCheckEvery) {
		return nil
	}
	s.checked = read
	need := s.keep
	if read == 0 {
		need += s.size
	}
	if err := checkOpenSpace(s.dir, need, s.free); err != nil {
		if !errors.Is(err, ErrNoSpaceToOpen) {
			return err
		}
		if read == 0 {
			return fmt.Errorf("%w: restoring this backup into %s needs about %d MiB free on its disk (the backup's size and %d MiB to open a database); free space there, or restore onto another disk",
				ErrNoSpaceToOpen, s.dir, (need+1<<20-1)>>20, s.keep>>20)
		}
		return fmt.Errorf("%w: the disk of %s filled up after %d MiB of the backup (at least %d MiB must stay free while Badger writes); free space there, or restore onto another disk",
			ErrNoSpaceToOpen, s.dir, read>>20, s.keep>>20)
	}
	return nil
}
