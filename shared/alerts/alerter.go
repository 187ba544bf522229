package alerts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// States reads the budget settings and spend of records (ddbkeys.Store,
// keys.Memory).
type States interface {
	SpendStates(ctx context.Context, refs []keys.Ref) (map[keys.Ref]keys.RecordSpend, error)
}

// Options configure an Alerter.
type Options struct {
	Destinations []Destination
	// TTL is budget_alert_ttl: the window of a budget with no
	// budget_duration; 0: DefaultTTL.
	TTL time.Duration
	// Lease is how long a claim is held while its alert is sent; 0: 2
	// minutes (longer than Attempts sends of SendTimeout).
	Lease time.Duration
	// Attempts per send (1 s, 2 s, ... apart); 0: 3.
	Attempts int
	// SendTimeout bounds one POST; 0: 5 s.
	SendTimeout time.Duration
	Client      *http.Client // nil: http.DefaultClient
	Logger      *slog.Logger
	Now         func() time.Time // nil: time.Now
	// Wait is the pause before a send's attempt n (1, 2, ...); nil: n
	// seconds.
	Wait func(ctx context.Context, n int) error
}

// Alerter checks the records a batch of spend events names and sends the
// alerts they reached (the spend consumer's Alerts).
type Alerter struct {
	states States
	claims Claims
	o      Options

	mu   sync.Mutex
	sent map[string]bool // claim ids found or marked sent: not claimed again here
}

// New returns an Alerter reading records through states and claiming
// alerts in claims.
func New(states States, claims Claims, o Options) *Alerter {
	if o.Lease <= 0 {
		o.Lease = 2 * time.Minute
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 5 * time.Second
	}
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Wait == nil {
		o.Wait = func(ctx context.Context, n int) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(n) * time.Second):
				return nil
			}
		}
	}
	return &Alerter{states: states, claims: claims, o: o, sent: map[string]bool{}}
}

// Deliver reads the records evs name (recorded already: a batch, or its
// redelivery) and sends each alert they reached that no one sent yet. Its
// error says some alert was not sent (released for a later Deliver: the
// caller has the batch delivered again); the others were.
func (a *Alerter) Deliver(ctx context.Context, evs []spend.Event) error {
	if len(a.o.Destinations) == 0 || len(evs) == 0 {
		return nil
	}
	at := map[keys.Ref]time.Time{}
	info := map[keys.Ref]Info{}
	var refs []keys.Ref
	for i := range evs {
		e := &evs[i]
		for _, r := range e.Refs() {
			if _, ok := kindNames[r.Kind]; !ok { // keys, teams, users, organizations
				continue
			}
			if _, ok := at[r]; !ok {
				refs = append(refs, r)
			}
			if e.End.After(at[r]) || at[r].IsZero() {
				at[r] = e.End
				info[r] = Info{Token: e.KeyHash, KeyAlias: e.KeyAlias, UserID: e.UserID, TeamID: e.TeamID, OrganizationID: e.OrganizationID}
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	states, err := a.states.SpendStates(ctx, refs)
	if err != nil {
		return fmt.Errorf("budget alerts: read records: %w", err)
	}
	var errs []error
	for _, r := range refs {
		rs, ok := states[r]
		if !ok {
			continue
		}
		for _, al := range Evaluate(r, rs, at[r], a.o.TTL) {
			al.Info = info[r]
			for _, d := range a.o.Destinations {
				if err := a.deliver(ctx, &al, d); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// deliver claims al at d, sends it and marks it sent.
func (a *Alerter) deliver(ctx context.Context, al *Alert, d Destination) error {
	id := al.ID(d.Name)
	if a.wasSent(id) {
		return nil
	}
	token := newToken()
	now := a.o.Now()
	st, err := a.claims.Claim(ctx, id, token, now, a.o.Lease, al.End.Add(24*time.Hour))
	if err != nil {
		return fmt.Errorf("budget alert %s: claim: %w", id, err)
	}
	switch st {
	case Sent:
		a.markSent(id)
		return nil
	case Busy:
		return nil // its holder sends it, or releases it and its batch comes back
	}
	sendErr := a.send(ctx, al, d)
	// Settle even when ctx has ended: a claim left pending blocks the
	// alert until its lease ends.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := a.claims.Settle(sctx, id, token, sendErr == nil); err != nil && !IsLost(err) {
		a.o.Logger.LogAttrs(ctx, slog.LevelWarn, "budget alert claim not settled",
			slog.String("alert", id), slog.Bool("sent", sendErr == nil), slog.String("error", err.Error()))
	}
	if sendErr != nil {
		return fmt.Errorf("budget alert %s: %w", id, sendErr)
	}
	a.markSent(id)
	a.o.Logger.LogAttrs(ctx, slog.LevelWarn, "budget alert sent", slog.String("record", string(al.Ref.Kind)),
		slog.String("id", al.Ref.ID), slog.String("threshold", string(al.Threshold)), slog.String("to", d.Name))
	return nil
}

// send posts al to d, up to Attempts times.
func (a *Alerter) send(ctx context.Context, al *Alert, d Destination) error {
	var err error
	for n := 0; n < a.o.Attempts; n++ {
		if n > 0 {
			if werr := a.o.Wait(ctx, n); werr != nil {
				return errors.Join(err, werr)
			}
		}
		sctx, cancel := context.WithTimeout(ctx, a.o.SendTimeout)
		err = post(sctx, a.o.Client, d, al)
		cancel()
		if err == nil {
			return nil
		}
	}
	return err
}

func (a *Alerter) wasSent(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent[id]
}

func (a *Alerter) markSent(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sent) >= 10_000 {
		clear(a.sent) // a bound: forgotten ids are found sent by Claim
	}
	a.sent[id] = true
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
