package capture

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// dsbFile writes dsbBytes to a file.
func dsbFile(t *testing.T, typ uint32, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secrets.pcapng")
	if err := os.WriteFile(path, dsbBytes(typ, data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dsbBytes is a pcapng of a section, an interface and a decryption
// secrets block of secrets type typ holding data (padded, with an
// option), then one empty-payload Ethernet packet block.
func dsbBytes(typ uint32, data []byte) []byte {
	le := binary.LittleEndian
	block := func(btyp uint32, body []byte) []byte {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		b := le.AppendUint32(nil, btyp)
		b = le.AppendUint32(b, uint32(12+len(body)))
		b = append(b, body...)
		return le.AppendUint32(b, uint32(12+len(body)))
	}
	var f []byte
	shb := le.AppendUint32(nil, 0x1a2b3c4d)
	shb = le.AppendUint16(shb, 1)
	shb = le.AppendUint16(shb, 0)
	shb = le.AppendUint64(shb, ^uint64(0))
	f = append(f, block(ngSHB, shb)...)
	idb := le.AppendUint16(nil, 1)
	idb = le.AppendUint16(idb, 0)
	idb = le.AppendUint32(idb, 262144)
	f = append(f, block(ngIDB, idb)...)
	dsb := le.AppendUint32(nil, typ)
	dsb = le.AppendUint32(dsb, uint32(len(data)))
	dsb = append(dsb, data...)
	for len(dsb)%4 != 0 {
		dsb = append(dsb, 0)
	}
	dsb = append(dsb, 1, 0, 4, 0, 'n', 'o', 't', 'e', 0, 0, 0, 0) // opt_comment, opt_endofopt
	f = append(f, block(ngDSB, dsb)...)
	epb := le.AppendUint32(nil, 0)
	epb = le.AppendUint64(epb, 0)
	epb = le.AppendUint32(epb, 14)
	epb = le.AppendUint32(epb, 14)
	epb = append(epb, make([]byte, 14)...)
	return append(f, block(ngEPB, epb)...)
}

// TestDecryptionSecrets: a decryption secrets block is handed to the
// OnSecrets callback whole, before the packet after it, and the file
// reads on; without a callback it is skipped, and the packet still read.
func TestDecryptionSecrets(t *testing.T) {
	keylog := []byte("CLIENT_RANDOM 00 11\n")
	path := dsbFile(t, SecretsTLSKeyLog, keylog)
	for _, ask := range []bool{true, false} {
		r, err := Open([]string{path}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		packetsAtSecrets := int64(-1)
		if ask {
			r.OnSecrets(func(file int, typ uint32, data []byte) {
				if file != 0 || typ != SecretsTLSKeyLog {
					t.Errorf("secrets of file %d, type %#x", file, typ)
				}
				got = append(got, data)
				packetsAtSecrets = r.Stats().Packets
			})
		}
		var p Packet
		for r.Next(&p) == nil {
		}
		if r.Stats().Packets != 1 || len(r.Problems()) != 0 {
			t.Errorf("ask %v: %d packets, problems %v", ask, r.Stats().Packets, r.Problems())
		}
		switch {
		case ask && (len(got) != 1 || !bytes.Equal(got[0], keylog)):
			t.Errorf("secrets %q, want %q", got, keylog)
		case ask && packetsAtSecrets != 0:
			t.Errorf("secrets handed over after %d packets, want before the first", packetsAtSecrets)
		case !ask && len(got) != 0:
			t.Errorf("secrets read without a callback")
		}
		r.Close()
	}
}

// TestDecryptionSecretsTooLong: a block whose secrets length does not fit
// in it stops the file with one problem, and nothing is handed over.
func TestDecryptionSecretsTooLong(t *testing.T) {
	path := dsbFile(t, SecretsTLSKeyLog, []byte("0123456789"))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("0123456789"))
	binary.LittleEndian.PutUint32(b[i-4:], 1<<20)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	called := false
	r.OnSecrets(func(int, uint32, []byte) { called = true })
	var p Packet
	for r.Next(&p) == nil {
	}
	if called || len(r.Problems()) != 1 {
		t.Errorf("called %v, problems %v", called, r.Problems())
	}
}
