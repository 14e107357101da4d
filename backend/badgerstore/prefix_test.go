package badgerstore

import (
	"bytes"
	"testing"
)

// TestKeyPrefixesDistinct: no key family's prefix may be a prefix of another's. Two families once shared
// "ie\x00" (the expiry index and the cell counters), and Verify then found every database inconsistent.
func TestKeyPrefixesDistinct(t *testing.T) {
	prefixes := map[string][]byte{
		"record": prefixRecord, "pair": prefixPair, "time": prefixTime, "kind": prefixKind, "geo": prefixGeo,
		"text": prefixText, "agg": prefixAgg, "change": prefixChange, "expiry": prefixExpiry, "hour": prefixHour,
		"word": prefixWord, "vocab": prefixVocab, "cellCount": prefixCellCount, "municipio": prefixMuni, "audit": prefixAudit,
		"report": prefixReport, "secret": prefixSecret, "indexVersion": keyIndexVersion, "probe": keyProbe,
		"response": prefixResponse, "webhookEvent": prefixWebhookEvent, "webhookQueue": prefixWebhookQueue, "webhookDue": prefixWebhookDue,
		"webhookState": prefixWebhookState, "webhookSeq": keyWebhookSeq, "blockSeq": keyBlockSeq,
		"cellJournal": prefixCellJournal, "cellBatch": keyCellBatch,
	}
	for a, pa := range prefixes {
		for b, pb := range prefixes {
			if a != b && bytes.HasPrefix(pb, pa) {
				t.Errorf("the %s keys' prefix %q is a prefix of the %s keys' %q", a, pa, b, pb)
			}
		}
	}
}
