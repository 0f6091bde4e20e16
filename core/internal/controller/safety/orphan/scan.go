package orphan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/driverclass"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// ReasonOrphanVMDeleted is the reason of the event on a MachineClass whose
// orphan VM was deleted.
const ReasonOrphanVMDeleted = "OrphanVMDeleted"

// apiCheckTimeout bounds the API server check at the start of a scan, so
// that an API server that accepts connections but never answers cannot
// hold the scan.
const apiCheckTimeout = 30 * time.Second

type classKey = types.NamespacedName

// vmKey identifies a listed VM within its class.
type vmKey struct{ providerID, machine string }

// Result is what one scan did.
type Result struct {
	// Classes is the number of classes whose VMs were listed and judged.
	Classes int
	// Skipped is the number of classes left out of this scan (ListMachines
	// failed, a Secret is missing, no provider spec); their candidates were
	// forgotten.
	Skipped int
	// Candidates is the number of orphan candidates seen in this scan,
	// first sightings included.
	Candidates int
	// Deleted lists the provider IDs of the VMs deleted.
	Deleted []string
	// Err is set when the scan was aborted (a read from the API server or
	// the cache failed): nothing more was deleted and every candidate was
	// forgotten.
	Err error
}

// Scan runs one scan over every MachineClass: it lists each class's VMs,
// remembers the orphan candidates, and deletes those that were candidates
// in the previous successful scan of their class too and still are after a
// fresh read of their Machine. It waits for the caches first. Scans are
// serialised.
func (c *Collector) Scan(ctx context.Context) Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.init(); err != nil {
		return Result{Err: err}
	}
	res, err := c.scan(ctx)
	if err != nil {
		// Without a trustworthy view of the Machines nothing may be
		// deleted, and candidates of this and earlier scans are no
		// evidence any more: the next deletion needs two new sightings.
		c.seen = nil
		res.Err = err
	}
	return res
}

func (c *Collector) scan(ctx context.Context) (Result, error) {
	var res Result
	if !c.anyDriverLists() {
		c.log.V(1).Info("No driver advertises TYPE_LIST_MACHINES; orphan VMs cannot be collected")
		c.seen = nil
		return res, nil
	}
	if err := c.waitForCaches(ctx); err != nil {
		return res, err
	}
	// The cache alone cannot tell a live API server from a dead one: it
	// keeps serving what it last saw. Ask the API server itself.
	if err := c.checkAPIServer(ctx); err != nil {
		return res, err
	}

	classes := &v1alpha1.MachineClassList{}
	if err := c.Client.List(ctx, classes, client.InNamespace(c.Namespace)); err != nil {
		return res, fmt.Errorf("listing machine classes: %w", err)
	}
	machines := map[string]map[string]*v1alpha1.Machine{} // namespace -> name -> machine
	next := map[classKey]map[vmKey]struct{}{}
	for i := range classes.Items {
		class := &classes.Items[i]
		key := client.ObjectKeyFromObject(class)
		byName, ok := machines[class.Namespace]
		if !ok {
			var err error
			if byName, err = c.cachedMachines(ctx, class.Namespace); err != nil {
				return res, err
			}
			machines[class.Namespace] = byName
		}
		seen, err := c.scanClass(ctx, class, byName, c.seen[key], &res)
		if err != nil {
			return res, err
		}
		if seen == nil {
			res.Skipped++
			continue
		}
		res.Classes++
		next[key] = seen
	}
	// Classes that are gone take their candidates with them.
	c.seen = next
	return res, nil
}

// anyDriverLists reports whether some driver advertises
// TYPE_LIST_MACHINES; without one there is nothing to scan.
func (c *Collector) anyDriverLists() bool {
	if c.Drivers == nil {
		return c.Driver.Has(driverv1alpha1.Capability_TYPE_LIST_MACHINES)
	}
	for _, d := range c.Drivers.Drivers() {
		if d.Has(driverv1alpha1.Capability_TYPE_LIST_MACHINES) {
			return true
		}
	}
	return false
}

// driverFor returns the driver of class and its name ("" with a single
// Driver).
func (c *Collector) driverFor(class *v1alpha1.MachineClass) (Driver, string, error) {
	if c.Drivers == nil {
		return c.Driver, "", nil
	}
	d, err := c.Drivers.ForProvider(class.Provider)
	if err != nil {
		return nil, "", err
	}
	name := d.Name()
	return d, name, nil
}

// checkAPIServer lists at most one Machine from the API server.
func (c *Collector) checkAPIServer(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, apiCheckTimeout)
	defer cancel()
	if err := c.APIReader.List(ctx, &v1alpha1.MachineList{}, client.InNamespace(c.Namespace), client.Limit(1)); err != nil {
		return fmt.Errorf("control API server unreachable: %w", err)
	}
	return nil
}

// cachedMachines returns the cache's Machines of namespace ns by name.
func (c *Collector) cachedMachines(ctx context.Context, ns string) (map[string]*v1alpha1.Machine, error) {
	list := &v1alpha1.MachineList{}
	if err := c.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing machines in %s: %w", ns, err)
	}
	byName := make(map[string]*v1alpha1.Machine, len(list.Items))
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	return byName, nil
}

// scanClass lists the VMs of one class and judges them against the cached
// machines. It returns the class's candidates for the next scan, or nil
// when the class was skipped. A returned error aborts the whole scan.
func (c *Collector) scanClass(ctx context.Context, class *v1alpha1.MachineClass, machines map[string]*v1alpha1.Machine,
	prev map[vmKey]struct{}, res *Result) (map[vmKey]struct{}, error) {
	log := c.log.WithValues("machineClass", client.ObjectKeyFromObject(class))
	if len(class.ProviderSpec.Raw) == 0 {
		log.V(1).Info("Skipping machine class without providerSpec")
		return nil, nil
	}
	d, name, err := c.driverFor(class)
	if err != nil {
		log.V(1).Info("Skipping machine class in the orphan scan", "reason", err.Error())
		return nil, nil
	}
	if name != "" {
		log = log.WithValues("driver", name)
	}
	if !d.Has(driverv1alpha1.Capability_TYPE_LIST_MACHINES) {
		log.V(1).Info("Skipping machine class: its driver does not advertise TYPE_LIST_MACHINES")
		return nil, nil
	}
	// The user data is for CreateMachine only: not sent here.
	secrets, _, err := driverclass.Secrets(ctx, c.APIReader, class)
	if err != nil {
		var missing *driverclass.MissingSecretError
		if errors.As(err, &missing) {
			log.Info("Skipping machine class in the orphan scan", "reason", err.Error())
			return nil, nil
		}
		return nil, fmt.Errorf("machine class %s: %w", class.Name, err)
	}
	msg := driverclass.Message(class)
	resp, err := d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: msg, Secrets: secrets})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A failed listing is no scan (Driver API §6.5.4).
		log.Error(err, "ListMachines failed; skipping the class in this scan", "code", driver.Code(err).String())
		return nil, nil
	}

	seen := map[vmKey]struct{}{}
	for _, vm := range resp.GetMachines() {
		if vm.GetProviderId() == "" || vm.GetMachineName() == "" {
			log.Info("Ignoring a listed VM without provider_id or machine_name", "providerID", vm.GetProviderId(), "machineName", vm.GetMachineName())
			continue
		}
		orphan, why := judge(vm, machines[vm.GetMachineName()])
		if !orphan {
			continue
		}
		res.Candidates++
		key := vmKey{providerID: vm.GetProviderId(), machine: vm.GetMachineName()}
		vmLog := log.WithValues("machine", vm.GetMachineName(), "providerID", vm.GetProviderId())
		if _, again := prev[key]; !again {
			vmLog.Info("Orphan VM candidate; it is deleted if it still is one at the next scan", "why", why)
			seen[key] = struct{}{}
			continue
		}
		// Second sighting: only the API server's word counts now.
		fresh, err := c.freshMachine(ctx, class.Namespace, vm.GetMachineName())
		if err != nil {
			return nil, err
		}
		if orphan, why = judge(vm, fresh); !orphan {
			vmLog.Info("Orphan VM candidate is not an orphan after all", "why", why)
			continue
		}
		if err := c.deleteVM(ctx, d, class, msg, secrets, vm, why); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// Still a confirmed orphan: the next scan tries again.
			vmLog.Error(err, "Deleting orphan VM failed; retrying at the next scan", "code", driver.Code(err).String())
			seen[key] = struct{}{}
			continue
		}
		res.Deleted = append(res.Deleted, vm.GetProviderId())
	}
	return seen, nil
}

// freshMachine reads a Machine from the API server; nil when the API
// server says it does not exist.
func (c *Collector) freshMachine(ctx context.Context, ns, name string) (*v1alpha1.Machine, error) {
	m := &v1alpha1.Machine{}
	err := c.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m)
	switch {
	case err == nil:
		return m, nil
	case notFoundFromAPIServer(err, name):
		return nil, nil
	}
	return nil, fmt.Errorf("reading machine %s/%s from the API server: %w", ns, name, err)
}

// notFoundFromAPIServer reports whether err is the API server's own answer
// that the Machine name does not exist. A 404 that is not a Kubernetes
// Status (a proxy in the way, an unserved resource) does not qualify: it
// says nothing about the Machine.
func notFoundFromAPIServer(err error, name string) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	if details == nil || details.Name != name {
		return false
	}
	for _, cause := range details.Causes {
		if cause.Type == metav1.CauseTypeUnexpectedServerResponse {
			return false
		}
	}
	return true
}

// deleteVM deletes one orphan VM: DeleteMachine with a Machine carrying only
// name, namespace and provider ID (Driver API §11.7), so that the driver
// deletes exactly that VM.
func (c *Collector) deleteVM(ctx context.Context, d Driver, class *v1alpha1.MachineClass, msg *driverv1alpha1.MachineClass,
	secrets map[string][]byte, vm *driverv1alpha1.ListedMachine, why string) error {
	_, err := d.DeleteMachine(ctx, &driverv1alpha1.DeleteMachineRequest{
		Machine: &driverv1alpha1.Machine{
			Name:       vm.GetMachineName(),
			Namespace:  class.Namespace,
			ProviderId: vm.GetProviderId(),
		},
		MachineClass: msg,
		Secrets:      secrets,
	})
	if err != nil && driver.Code(err) != codes.NotFound { // NOT_FOUND: gone already, as good as OK
		return err
	}
	classKey := client.ObjectKeyFromObject(class).String()
	c.metrics.deleted.WithLabelValues(classKey).Inc()
	c.log.Info("Deleted orphan VM", "machineClass", classKey, "machine", vm.GetMachineName(), "providerID", vm.GetProviderId(), "why", why)
	c.Recorder.Eventf(class, madeFor(class.Namespace, vm), corev1.EventTypeNormal, ReasonOrphanVMDeleted, "DeleteOrphanVM",
		"Deleted orphan VM %s of machine %s: %s", vm.GetProviderId(), vm.GetMachineName(), why)
	return nil
}

// madeFor is the Machine a VM was made for, by name (it no longer exists, or
// never did), as the related object of the VM's event: distinct VMs get
// distinct events rather than one series per class (setup.Recorder). A VM
// without a machine name has none.
func madeFor(namespace string, vm *driverv1alpha1.ListedMachine) runtime.Object {
	if vm.GetMachineName() == "" {
		return nil
	}
	return &v1alpha1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: vm.GetMachineName()},
	}
}
