package machine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// A machine no MachineSet controls does not expire: its expireAfter is
// reported as ignored (condition and one Warning event), not taken silently.
func testExpireAfterOnBareMachine(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineExpireAfter: &v1alpha1.Duration{Duration: time.Hour}}
	})
	m := w.eventually("m1", waitLong, "the ignored expireAfter reported", func(m *v1alpha1.Machine) bool {
		c := meta.FindStatusCondition(m.Status.MachineConditions, conditionExpiryHonoured)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	assert.Equal(t, reasonExpireAfterIgnored, meta.FindStatusCondition(m.Status.MachineConditions, conditionExpiryHonoured).Reason)
	assert.Contains(t, w.waitEvent("m1", corev1.EventTypeWarning, reasonExpireAfterIgnored), "does not expire")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
}
