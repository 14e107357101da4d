package caddymodule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// instanceClaimer is a database shared by several nodes (pgstore.Store.ClaimInstance).
type instanceClaimer interface {
	ClaimInstance(ctx context.Context, instance, nonce string) (before string, err error)
}

// instanceClaimEvery is how often a node over a shared database claims its Caddy instance id.
var instanceClaimEvery = 5 * time.Second

// instanceShared is whether another live process claims this one's Caddy instance id (the gauge
// directaid_instance_id_shared and the status page read it).
var instanceShared atomic.Bool

// watchInstance claims, every instanceClaimEvery until stop, this process's Caddy instance id in the shared
// database with a nonce of its own. caddy-ratelimit's distributed mode names each node's counts by that id:
// two live processes with one id (two nodes on one host as one user, a copied image or volume with
// instance.uuid) overwrite one entry and each ignores it as its own, so every shared limit is counted per
// node, with nothing said. Finding another nonce at a claim after its first successful one means exactly
// that (the first finds the last process's, which writes no more, even when the database was down when
// this one started): it logs an error a minute while it lasts.
func watchInstance(db instanceClaimer, log *zap.Logger) (stop func()) {
	id, err := caddy.InstanceID()
	if err != nil {
		log.Warn("the Caddy instance id could not be read: two nodes sharing one would not be noticed", zap.Error(err))
		return func() {}
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	nonce := hex.EncodeToString(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(instanceClaimEvery)
		defer t.Stop()
		var logged time.Time
		claimed := false // a claim of this process succeeded: another nonce found after it is a live twin's
		for {
			before, err := db.ClaimInstance(ctx, id.String(), nonce)
			shared := err == nil && claimed && before != "" && before != nonce
			if err == nil {
				instanceShared.Store(shared)
				claimed = true
			}
			if shared && time.Since(logged) >= time.Minute {
				logged = time.Now()
				log.Error("another running node has this node's Caddy instance id: the shared rate limits are counted on each node apart; "+
					"give each node its own data directory (XDG_DATA_HOME) and remove instance.uuid from copied images (docs/postgres.md)",
					zap.String("instance_id", id.String()), zap.String("file", caddy.AppDataDir()+"/instance.uuid"))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
