package otlptls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

func TestConfigLoadsCAAndClientPair(t *testing.T) {
	ca := otlptest.NewCA(t)
	client := ca.Issue(t, "client")
	cfg, err := Files{Certificate: ca.CertFile, ClientCertificate: client.CertFile, ClientKey: client.KeyFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || !cfg.RootCAs.Equal(ca.Pool) {
		t.Error("RootCAs are not the CA file's")
	}
	if len(cfg.Certificates) != 1 || !cfg.Certificates[0].Leaf.Equal(client.TLS.Leaf) {
		t.Errorf("client certificates = %d, want the one pair", len(cfg.Certificates))
	}
}

func TestConfigWithoutFilesUsesSystemRoots(t *testing.T) {
	cfg, err := Files{}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs != nil || len(cfg.Certificates) != 0 {
		t.Errorf("RootCAs %v, %d client certificates: want the system's roots and none", cfg.RootCAs, len(cfg.Certificates))
	}
}

func TestConfigRejectsBadFiles(t *testing.T) {
	ca := otlptest.NewCA(t)
	a, b := ca.Issue(t, "a"), ca.Issue(t, "b")
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for name, tc := range map[string]struct {
		files Files
		want  string
	}{
		"unreadable CA":         {Files{Certificate: missing}, "load otlp certificate: open " + missing + ": no such file or directory"},
		"CA without PEM":        {Files{Certificate: notPEM}, "load otlp certificate " + notPEM + ": no PEM certificate in it"},
		"a key as the CA":       {Files{Certificate: a.KeyFile}, "load otlp certificate " + a.KeyFile + ": no PEM certificate in it"},
		"key without cert":      {Files{ClientKey: a.KeyFile}, "set both or neither"},
		"cert without key":      {Files{ClientCertificate: a.CertFile}, "set both or neither"},
		"mismatched key pair":   {Files{ClientCertificate: a.CertFile, ClientKey: b.KeyFile}, "load otlp client certificate " + a.CertFile + " and key " + b.KeyFile + ": tls: private key does not match public key"},
		"unreadable client key": {Files{ClientCertificate: a.CertFile, ClientKey: missing}, "load otlp client certificate " + a.CertFile + " and key " + missing + ": open " + missing + ": no such file or directory"},
	} {
		_, err := tc.files.Config()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}
