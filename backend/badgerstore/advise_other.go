//go:build !linux

package badgerstore

// adviser does nothing outside Linux: the read-around it avoids is Linux's (see advise_linux.go).
type adviser struct{}

func newAdviser(string) *adviser { return &adviser{} }

func (*adviser) advise() (int, error) { return 0, nil }

func (*adviser) bulk() {}

func preloadTableTails(string) {}
