package phase

import (
	"context"
	"errors"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

func TestRunStopsAtStopOrError(t *testing.T) {
	var ran []string
	step := func(name string, res Result, err error) Func[*[]string] {
		return func(_ context.Context, s *[]string) (Result, error) {
			*s = append(*s, name)
			return res, err
		}
	}
	boom := errors.New("boom")

	res, err := Run(context.Background(), &ran,
		step("a", Result{RequeueAfter: 3 * time.Second}, nil),
		step("b", Result{RequeueAfter: time.Second, Stop: true}, nil),
		step("c", Result{}, nil))
	if err != nil || len(ran) != 2 || res.RequeueAfter != time.Second || !res.Stop {
		t.Fatalf("ran %v, result %+v, error %v; want a and b, the earliest requeue 1s, stopped", ran, res, err)
	}

	ran = nil
	_, err = Run(context.Background(), &ran, step("a", Result{}, boom), step("b", Result{}, nil))
	if !errors.Is(err, boom) || len(ran) != 1 {
		t.Fatalf("ran %v, error %v; want only a and its error", ran, err)
	}

	ran = nil
	res, err = Run(context.Background(), &ran, step("a", Result{}, nil), step("b", Result{RequeueAfter: 2 * time.Second}, nil))
	if err != nil || len(ran) != 2 || res.RequeueAfter != 2*time.Second || res.Stop {
		t.Fatalf("ran %v, result %+v, error %v; want both, requeue 2s, not stopped", ran, res, err)
	}
}

func TestRequeue(t *testing.T) {
	const resync = 10 * time.Minute
	for _, c := range []struct {
		res  Result
		want ctrl.Result
	}{
		{Result{}, ctrl.Result{RequeueAfter: resync}},
		{Result{RequeueAfter: time.Second}, ctrl.Result{RequeueAfter: time.Second}},
		{Result{RequeueAfter: time.Hour}, ctrl.Result{RequeueAfter: resync}},
		{Result{NoResync: true}, ctrl.Result{}},
		{Result{RequeueAfter: time.Hour, NoResync: true}, ctrl.Result{RequeueAfter: time.Hour}},
	} {
		if got := c.res.Requeue(resync); got != c.want {
			t.Errorf("%+v.Requeue(%v) = %+v, want %+v", c.res, resync, got, c.want)
		}
	}
}
