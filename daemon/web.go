package daemon

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/daemon/tokens"
	"github.com/sessiond/sessiond/daemon/webpage"
	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/ipc/server"
)

// listenWeb serves the API on [web] listen, with tokens, when configured.
func (d *Daemon) listenWeb(srv *server.Server) error {
	w := d.cfg.Web
	if !w.On() {
		return nil
	}
	var tc *tls.Config
	fingerprint := ""
	if w.UseTLS() {
		cert, fp, err := d.webCertificate()
		if err != nil {
			return fmt.Errorf("web listener's certificate: %w", err)
		}
		tc, fingerprint = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, fp
	}
	l, err := net.Listen("tcp", w.Listen)
	if err != nil {
		return fmt.Errorf("web listener on %s: %w", w.Listen, err)
	}
	hs, done := srv.ServeWeb(l, server.WebOptions{Tokens: tokenChecker{tokens.Open(d.cfg.StateDir)}, TLS: tc, Page: webPage()})
	d.webServer = hs
	go func() {
		if err := <-done; err != nil {
			d.log.Error("web listener stopped", zap.Error(err))
		}
	}()
	scheme := "http"
	if tc != nil {
		scheme = "https"
	}
	if w.URL == "" {
		d.notes.SetPageURL(scheme + "://" + l.Addr().String())
	}
	fields := []zap.Field{zap.String("url", scheme+"://"+l.Addr().String()+"/")}
	if fingerprint != "" {
		fields = append(fields, zap.String("certificate_sha256", fingerprint))
	}
	d.log.Info("serving the web API (tokens: sessiond token create)", fields...)
	return nil
}

// stopWeb stops the web listener, if there is one.
func (d *Daemon) stopWeb(ctx context.Context) {
	if d.webServer == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := d.webServer.Shutdown(sctx); err != nil {
		_ = d.webServer.Close()
	}
}

// tokenChecker is the token store as the web listener asks it.
type tokenChecker struct{ s *tokens.Store }

func (t tokenChecker) Check(token string, now time.Time) (ipc.Caller, string, error) {
	return t.s.Check(token, now)
}

// webCertificate is the listener's certificate: the configured one, else
// one sessiond made (state dir web/, kept across restarts so that a
// client pins it once), and its SHA-256 fingerprint.
func (d *Daemon) webCertificate() (tls.Certificate, string, error) {
	w := d.cfg.Web
	if w.Cert != "" {
		cert, err := tls.LoadX509KeyPair(w.Cert, w.Key)
		if err != nil {
			return tls.Certificate{}, "", err
		}
		return cert, fingerprintOf(cert), nil
	}
	dir := filepath.Join(d.cfg.StateDir, "web")
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if cert, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil {
		return cert, fingerprintOf(cert), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		d.log.Warn("the web listener's certificate is unreadable: a new one is made", zap.Error(err))
	}
	if err := state.EnsureDir(dir); err != nil {
		return tls.Certificate{}, "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	host, _, _ := net.SplitHostPort(w.Listen)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "sessiond " + host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(2, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else if host != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	if err := state.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return tls.Certificate{}, "", err
	}
	if err := state.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return tls.Certificate{}, "", err
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	return cert, fingerprintOf(cert), nil
}

// fingerprintOf is the certificate's SHA-256, as AB:CD:...
func fingerprintOf(c tls.Certificate) string {
	if len(c.Certificate) == 0 {
		return ""
	}
	sum := sha256.Sum256(c.Certificate[0])
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var parts []string
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}

// webPage is the phone's page.
func webPage() http.Handler { return webpage.Handler() }
