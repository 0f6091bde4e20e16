package setup

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// noteLimit is the longest note, in bytes, events.k8s.io/v1 accepts. The API
// server refuses an event with a longer one, and the event is lost: the
// recorder only logs the refusal.
const noteLimit = 1024

// truncated ends a note cut to noteLimit.
const truncated = " …(truncated)"

// Recorder returns the event recorder of the controller name on c: the
// manager for events on the control cluster's objects, a target cluster for
// events on its Nodes and machine configuration objects. Every controller
// records through it, one way: Eventf(regarding, related, type, reason,
// action, note, args...), an events.k8s.io/v1 Event that kubectl and the
// core/v1 Event API show alike (note as message, regarding as involved
// object, name as reporting controller).
//
// Events with the same type, reason, action, regarding and related object
// fold into one event with a count (events.k8s.io's series) for as long as
// they repeat within six minutes; the note stays the first one's. A
// controller that reports one event per child (a created machine, a
// deleted VM) names the child as related object, so that each child keeps
// its own event. A note longer than noteLimit is cut to fit rather than
// refused.
func Recorder(c cluster.Cluster, name string) events.EventRecorder {
	return fitNotes{c.GetEventRecorder(name)}
}

// fitNotes cuts notes to noteLimit before they reach the API server.
type fitNotes struct {
	events.EventRecorder
}

func (f fitNotes) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	f.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", fitNote(fmt.Sprintf(note, args...)))
}

// fitNote returns note, cut at a character boundary and marked when it is
// longer than noteLimit.
func fitNote(note string) string {
	if len(note) <= noteLimit {
		return note
	}
	cut := noteLimit - len(truncated)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + truncated
}
