package orphan

// Trigger asks the collector for a scan now, between its periodic ones. MCM
// scans for orphans when a machine's last operation newly reports
// OutOfRange, the code its providers answer when several VMs carry one
// machine's name (machine-controller-manager pkg/util/provider/machinecontroller
// machine.go, updateMachineToSafety): the extra VMs are likely orphans. Fires
// while a scan runs or is already asked for are folded into one scan.
type Trigger struct{ ch chan struct{} }

// NewTrigger returns a Trigger to hand to the collector (Collector.Trigger)
// and to whoever fires it.
func NewTrigger() *Trigger { return &Trigger{ch: make(chan struct{}, 1)} }

// Fire asks for a scan; it never blocks.
func (t *Trigger) Fire() {
	if t == nil {
		return
	}
	select {
	case t.ch <- struct{}{}:
	default:
	}
}

// fired is the channel the collector's loop waits on; nil (never ready) for
// a nil Trigger.
func (t *Trigger) fired() <-chan struct{} {
	if t == nil {
		return nil
	}
	return t.ch
}
