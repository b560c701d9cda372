package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/fleet"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

// saslPasswordEnv holds the SASL password when no file gives it: a secret
// never comes from the command line, which every local user can read.
const saslPasswordEnv = "KIDSCOPE_SASL_PASSWORD"

// kafkaFlags are the options of kidscope's own Kafka connection (live
// --publish, fleet), each flag name after prefix.
type kafkaFlags struct {
	prefix       string
	tls          bool
	tlsCA        string
	tlsCert      string
	tlsKey       string
	tlsName      string
	sasl         string
	saslUser     string
	saslPassFile string
}

func (k *kafkaFlags) register(cmd *cobra.Command, prefix string) {
	k.prefix = prefix
	fl := cmd.Flags()
	fl.BoolVar(&k.tls, prefix+"tls", false, "connect to Kafka over TLS (the system's roots unless --"+prefix+"tls-ca)")
	fl.StringVar(&k.tlsCA, prefix+"tls-ca", "", "PEM file of the CA certificates that sign the brokers' (implies --"+prefix+"tls)")
	fl.StringVar(&k.tlsCert, prefix+"tls-cert", "", "PEM client certificate for mutual TLS (with --"+prefix+"tls-key)")
	fl.StringVar(&k.tlsKey, prefix+"tls-key", "", "PEM private key of --"+prefix+"tls-cert")
	fl.StringVar(&k.tlsName, prefix+"tls-server-name", "", "the name the brokers' certificates must carry (default: the host of each address)")
	fl.StringVar(&k.sasl, prefix+"sasl", "", "SASL mechanism: plain, scram-sha-256 or scram-sha-512")
	fl.StringVar(&k.saslUser, prefix+"sasl-user", "", "SASL user name")
	fl.StringVar(&k.saslPassFile, prefix+"sasl-password-file", "", "file holding the SASL password (else $"+saslPasswordEnv+"; never on the command line)")
}

// options are the Kafka client's TLS and SASL options.
func (k *kafkaFlags) options() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if k.tls || k.tlsCA != "" || k.tlsCert != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: k.tlsName}
		if k.tlsCA != "" {
			pem, err := os.ReadFile(k.tlsCA)
			if err != nil {
				return nil, fmt.Errorf("--%stls-ca: %w", k.prefix, err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--%stls-ca %s: no PEM certificate in it", k.prefix, k.tlsCA)
			}
		}
		if (k.tlsCert == "") != (k.tlsKey == "") {
			return nil, fmt.Errorf("--%stls-cert and --%stls-key go together", k.prefix, k.prefix)
		}
		if k.tlsCert != "" {
			pair, err := tls.LoadX509KeyPair(k.tlsCert, k.tlsKey)
			if err != nil {
				return nil, fmt.Errorf("--%stls-cert: %w", k.prefix, err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if k.sasl == "" {
		if k.saslUser != "" || k.saslPassFile != "" {
			return nil, fmt.Errorf("--%ssasl-user and --%ssasl-password-file need --%ssasl", k.prefix, k.prefix, k.prefix)
		}
		return opts, nil
	}
	pass, err := k.password()
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(k.sasl) {
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: k.saslUser, Pass: pass}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: k.saslUser, Pass: pass}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: k.saslUser, Pass: pass}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("--%ssasl %q: want plain, scram-sha-256 or scram-sha-512", k.prefix, k.sasl)
	}
	return opts, nil
}

func (k *kafkaFlags) password() (string, error) {
	if k.saslPassFile != "" {
		b, err := os.ReadFile(k.saslPassFile)
		if err != nil {
			return "", fmt.Errorf("--%ssasl-password-file: %w", k.prefix, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	if p, ok := os.LookupEnv(saslPasswordEnv); ok {
		return p, nil
	}
	return "", fmt.Errorf("--%ssasl %s needs a password: --%ssasl-password-file FILE or $%s", k.prefix, k.sasl, k.prefix, saslPasswordEnv)
}

// brokerList splits a comma-separated list of host:port.
func brokerList(flag, s string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s: want host:port[,host:port…]", flag)
	}
	return out, nil
}

// publishFlags are live's and analyze's --publish.
type publishFlags struct {
	brokers string
	topic   string
	agent   string
	buffer  int
	kafka   kafkaFlags
}

func (p *publishFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&p.brokers, "publish", "", "also publish what the rules across connections read, and the findings, to Kafka at these brokers (host:port,…) for kidscope fleet")
	fl.StringVar(&p.topic, "publish-topic", "kidscope", "the topic to publish to")
	fl.StringVar(&p.agent, "agent", "", "this agent's name in what it publishes (default: the host name)")
	fl.IntVar(&p.buffer, "publish-buffer", 10000, "records waiting for Kafka at most; past it live drops and counts them (a capture never waits), analyze waits while Kafka takes records")
	p.kafka.register(cmd, "publish-")
}

// start connects the publisher, or returns nil without --publish.
// A file's analysis (wait) waits for Kafka when the buffer is full; a
// capture never does.
func (p *publishFlags) start(source string, files fleet.Files, wait bool) (*fleet.Publisher, error) {
	if p.brokers == "" {
		return nil, nil
	}
	brokers, err := brokerList("publish", p.brokers)
	if err != nil {
		return nil, err
	}
	if p.topic == "" {
		return nil, errors.New("--publish-topic: want a topic name")
	}
	if p.buffer <= 0 {
		return nil, fmt.Errorf("--publish-buffer %d: want a number of records above 0", p.buffer)
	}
	kopts, err := p.kafka.options()
	if err != nil {
		return nil, err
	}
	agent := p.agent
	if agent == "" {
		if agent, err = os.Hostname(); err != nil || agent == "" {
			agent = "kidscope"
		}
	}
	return fleet.NewPublisher(fleet.PublisherOptions{Brokers: brokers, Topic: p.topic, Agent: agent, Source: source,
		Version: kidscopeVersion(), Files: files, MaxBuffered: p.buffer, Wait: wait, Client: kopts})
}

// publishedOrigins are what a publishing run's files stand for in its
// findings' IDs: its agent and run, so that a finding has the ID that the
// fleet gives it (nil without --publish).
func publishedOrigins(pub *fleet.Publisher, files []string) []report.Origin {
	if pub == nil {
		return nil
	}
	return report.AgentOrigins(pub.Agent(), pub.Run(), files)
}

// publishTimeout is how long a stopping agent waits for Kafka to take
// what it buffered.
const publishTimeout = 10 * time.Second

// publishingSink adds publishing to a run's sink (which may be nil).
type publishingSink struct {
	inner pipeline.Sink
	pub   *fleet.Publisher
}

func (s publishingSink) Event(c *pipeline.Conn, e *decode.Event) {
	if s.inner != nil {
		s.inner.Event(c, e)
	}
}

func (s publishingSink) Closed(c *pipeline.Conn) {
	if s.inner != nil {
		s.inner.Closed(c)
	}
}

func (s publishingSink) Open(c *pipeline.Conn) {
	if o, ok := s.inner.(pipeline.OpenSink); ok {
		o.Open(c)
	}
}

func (s publishingSink) Finding(f *rules.Finding) {
	if o, ok := s.inner.(pipeline.FindingSink); ok {
		o.Finding(f)
	}
}

func (s publishingSink) Observed(o *rules.Observation)        { s.pub.Observed(o) }
func (s publishingSink) Found(f *rules.Finding, c kafka.Conn) { s.pub.Found(f, c) }

// withPublisher is sink publishing to pub too, or sink without one.
func withPublisher(sink pipeline.Sink, pub *fleet.Publisher) pipeline.Sink {
	if pub == nil {
		return sink
	}
	return publishingSink{inner: sink, pub: pub}
}

// sayPublished says on stderr what went to Kafka.
func sayPublished(pub *fleet.Publisher, topic string) {
	published, delivered, dropped := pub.Counts()
	line := fmt.Sprintf("kidscope: published %d records to topic %s: %d delivered", published, topic, delivered)
	if dropped > 0 {
		var why []string
		full, last := pub.Cause()
		if last != nil {
			why = append(why, "the last error: "+report.SafeText(last.Error()))
		}
		if full > 0 {
			why = append(why, fmt.Sprintf("%d past the --publish-buffer", full))
		}
		line += fmt.Sprintf(", %d dropped (%s)", dropped, strings.Join(why, "; "))
	}
	fmt.Fprintln(os.Stderr, line)
}

// helloEvery is how often a live agent publishes its counts.
const helloEvery = 5 * time.Second
