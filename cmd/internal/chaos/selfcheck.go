package chaos

import (
	"context"
	"fmt"
	"time"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// selfCheckMachine names the VM the self-check creates behind the manager's
// back.
const selfCheckMachine = "chaos-self-check"

// selfCheck shows that the census can see what it looks for: it creates a
// VM through the virtualnode driver for a machine that has no Machine (a
// leak, and its Node an orphan), requires the census to count exactly that,
// deletes the VM and requires the census to be clean again. A census that
// could not see a leak would pass every phase.
func (s *suite) selfCheck(ctx context.Context, f *fleet) error {
	m := &driverv1alpha1.Machine{Name: selfCheckMachine, Namespace: f.namespace}
	created, err := f.vms.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{Machine: m, MachineClass: f.driverClass(f.class)})
	if err != nil {
		return fmt.Errorf("self-check: creating a VM behind the manager's back: %w", err)
	}
	m.ProviderId = created.GetProviderId()
	if err := s.wait(ctx, time.Minute, "self-check: the census seeing 1 leaked VM and 1 orphan Node", func(ctx context.Context) (bool, string, error) {
		c, err := f.count(ctx, s.c)
		return c.leaks == 1 && c.orphans == 1, c.String(), err
	}); err != nil {
		return err
	}
	if _, err := f.vms.DeleteMachine(ctx, &driverv1alpha1.DeleteMachineRequest{Machine: m, MachineClass: f.driverClass(f.class)}); err != nil {
		return fmt.Errorf("self-check: deleting the VM: %w", err)
	}
	return s.wait(ctx, time.Minute, "self-check: the census clean again", func(ctx context.Context) (bool, string, error) {
		c, err := f.count(ctx, s.c)
		return c.converged(), c.String(), err
	})
}
