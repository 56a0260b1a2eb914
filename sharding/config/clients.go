package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientOption returns the rueidis options of r: the seeds, the ACL user and
// password, and TLS. The caller adds its own tuning (cache, flush delay).
// Call it after Resolve.
func (r Redis) ClientOption() rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress: r.Addrs, ShuffleInit: true,
		Username: r.User, Password: r.Password.Reveal(),
		TLSConfig: r.TLS.Config(),
	}
}

// Opts returns the franz-go options of k: the seeds, TLS and SASL. Call it
// after Resolve.
func (k Kafka) Opts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...)}
	if c := k.TLS.Config(); c != nil {
		opts = append(opts, kgo.DialTLSConfig(c))
	}
	auth := scram.Auth{User: k.User, Pass: k.Password.Reveal()}
	switch k.SASL {
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(auth.AsSha256Mechanism()))
	}
	return opts
}

// PoolConfig parses the URL into a pgx pool configuration and sets the
// password read from PasswordFile, if any. Its error never quotes the URL
// (it may hold a password).
func (p Postgres) PoolConfig() (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(p.URL)
	if err != nil {
		return nil, errors.New("parsing -database-url: not a valid PostgreSQL URL")
	}
	if p.Password != "" {
		cfg.ConnConfig.Password = p.Password.Reveal()
	}
	return cfg, nil
}

// Config returns the *tls.Config Resolve built, or nil when TLS is off.
func (t TLS) Config() *tls.Config {
	if !t.Enabled || t.config == nil {
		return nil
	}
	return t.config.Clone()
}

// resolve checks t's files and builds its *tls.Config.
func (t *TLS) resolve(prefix string) error {
	t.config = nil
	if !t.Enabled {
		if t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" {
			return fmt.Errorf("-%s-tls-ca, -cert, -key or -server-name given without -%s-tls: turn TLS on or drop them", prefix, prefix)
		}
		return nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return fmt.Errorf("-%s-tls-ca: %w", prefix, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-%s-tls-ca %s: no PEM certificate in it", prefix, t.CAFile)
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return fmt.Errorf("-%s-tls-cert and -%s-tls-key go together", prefix, prefix)
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return fmt.Errorf("-%s-tls-cert/-key: %w", prefix, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	t.config = c
	return nil
}

// readSecret reads the secret in file (the flag named flagName): its
// contents without one trailing newline, so that a file written by echo
// works. An empty name is no secret.
func readSecret(flagName, file string) (Secret, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("-%s: %w", flagName, err)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return "", fmt.Errorf("-%s %s is empty", flagName, file)
	}
	if strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("-%s %s holds more than one line", flagName, file)
	}
	return Secret(s), nil
}

// checkHostPort wants host:port with a port in 1..65535.
func checkHostPort(a string) error {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return errors.New("want host:port")
	}
	n, err := strconv.Atoi(p)
	if h == "" || err != nil || n < 1 || n > 65535 {
		return errors.New("want host:port with a port in 1..65535")
	}
	return nil
}
