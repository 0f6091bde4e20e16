package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// clauseGapMutants break the clauses that the sentence-level mutants left
// unbroken (conformance/internal/trace/clauses.go): one per clause.
func clauseGapMutants() []mutant {
	var out []mutant
	add := func(name, id, test, want string, h hookFunc) {
		out = append(out, mutant{name: name, id: id, m: mutation{hook: h}, test: test, want: want})
	}
	specIs := func(bad func(spec []byte) bool) hookFunc {
		return onRPC("CreateMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			if bad(req.(*driverv1alpha1.CreateMachineRequest).GetMachineClass().GetProviderSpec()) {
				return okCreate(), nil
			}
			return next()
		})
	}
	// §4.4: each way a provider_spec is not a JSON object, accepted.
	add("empty provider spec accepted", "R-4.4-answer-invalid-argument#empty", "CreateMachine/invalid_arguments",
		"provider spec missing answered OK, want INVALID_ARGUMENT", specIs(func(spec []byte) bool { return len(spec) == 0 }))
	add("provider spec not JSON accepted", "R-4.4-answer-invalid-argument#not-json", "CreateMachine/invalid_arguments",
		"provider spec not json answered OK, want INVALID_ARGUMENT", specIs(func(spec []byte) bool { return len(spec) > 0 && !json.Valid(spec) }))

	// §4.9: the uid taken as the idempotency key: another uid, another VM.
	add("uid taken as the idempotency key", "R-4.9-may-record-vm-diagnosis#not-key", "CreateMachine/ignored_fields",
		"with another machine.uid returned provider ID", func() hookFunc {
			st := &hookState{seen: map[string]bool{}}
			first := map[string]string{}
			return onRPC("CreateMachine", func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				m := req.(*driverv1alpha1.CreateMachineRequest).GetMachine()
				resp, err := next()
				r, ok := resp.(*driverv1alpha1.CreateMachineResponse)
				if err != nil || !ok {
					return resp, err
				}
				st.mu.Lock()
				defer st.mu.Unlock()
				if uid, known := first[m.GetName()]; !known {
					first[m.GetName()] = m.GetUid()
				} else if uid != m.GetUid() {
					// The VM this uid "owns" is a new one to the driver.
					r.ProviderId += "-" + m.GetUid()
				}
				return r, nil
			})
		}())
	// The suite deletes the VMs by the provider IDs it was given, which
	// this driver invented: the shared VM is left.
	out[len(out)-1].m.leavesVMs = true

	// §6.1.3: user_data compared on a repeated create.
	out = append(out, mutant{name: "user data compared on a repeated create", id: "R-6.1.3-not-compare-secrets-user-data#user-data",
		b: breakage{userDataCompared: true}, test: "CreateMachine/ignored_fields", want: "with other user_data answered ALREADY_EXISTS"})

	// §5.3.2: a probe that answers, but late: every fourth call takes
	// longer than the core's 5-second deadline.
	add("probe answers after 5 seconds", "R-5.3.2-answer-within-5-seconds#in-time", "Identity/probe", "Probe #",
		func() hookFunc {
			st := &hookState{}
			return onRPC("Probe", func(_ *refDriver, ctx context.Context, _ any, next func() (any, error)) (any, error) {
				if st.count("")%4 == 0 {
					select {
					case <-time.After(5500 * time.Millisecond):
					case <-ctx.Done():
						return nil, status.Error(codes.DeadlineExceeded, fmt.Sprint(ctx.Err()))
					}
				}
				return next()
			})
		}())

	// §2.6: only the first connection served; later ones get UNAVAILABLE.
	add("only one connection served", "R-2.6-accept-several-connections#several", "Transport/several_connections",
		"on a second connection answered UNAVAILABLE", func() hookFunc {
			var mu sync.Mutex
			var first any
			return func(_ *refDriver, ctx context.Context, _ string, _ any, next func() (any, error)) (any, error) {
				mu.Lock()
				if first == nil {
					first = connID(ctx)
				}
				other := connID(ctx) != first
				mu.Unlock()
				if other {
					return nil, status.Error(codes.Unavailable, "busy with another client")
				}
				return next()
			}
		}())
	return out
}
