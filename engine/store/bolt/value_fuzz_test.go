package bolt

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzDecodeValue: any bytes read from the log decode to a value or an error, never a
// panic; what decodes encodes back to bytes that decode to the same value, a record
// payload splits within its bounds or fails, a state value decodes to a state or an
// error, and a state written whole that Open splits decodes.
func FuzzDecodeValue(f *testing.F) {
	f.Add(encodeValue(value{kind: kindState, key: "req-1", expires: 1, revision: 2}, []byte(`{"id":"req-1"}`)))
	f.Add(encodeValue(value{kind: kindRecord, key: "r"}, binary.BigEndian.AppendUint32(nil, 2), []byte(`{}{"request_id":"r"}`)))
	f.Add(encodeValue(value{kind: kindWindow, key: string(make([]byte, 300)), revision: -1}))
	f.Add([]byte{kindCache, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{})
	f.Add(encodeValue(value{kind: kindState, key: "r"}, binary.BigEndian.AppendUint32(nil, 2), []byte(`{}{"id":"r"}`)))
	f.Add(encodeValue(value{kind: kindState, key: "r"}, binary.BigEndian.AppendUint32(nil, 40), []byte(`{"s":{"status":"started","attempts":1}}{"id":"r"}`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeValue(b)
		if err != nil {
			return
		}
		again, err := decodeValue(encodeValue(v, v.payload))
		if err != nil || again.kind != v.kind || again.key != v.key || again.expires != v.expires ||
			again.revision != v.revision || !bytes.Equal(again.payload, v.payload) {
			t.Fatalf("%+v encoded decodes to %+v, %v", v, again, err)
		}
		if sum, rec, err := split(v.payload); err == nil && 4+len(sum)+len(rec) != len(v.payload) {
			t.Fatalf("split of %d bytes into %d and %d", len(v.payload), len(sum), len(rec))
		}
		if st, err := decodeState([2][]byte{b}); err == nil && st == nil {
			t.Fatal("decodeState returned neither a state nor an error")
		}
		if writtenWhole(v.payload) {
			if split, err := splitWhole(v); err == nil {
				if _, err := decodeState([2][]byte{split}); err != nil {
					t.Fatalf("%q split does not decode: %v", v.payload, err)
				}
			}
		}
	})
}
