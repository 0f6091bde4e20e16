package classupdate

import (
	"github.com/go-logr/logr"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/driver"
)

// scope is what one reconcile of a class reads and works on.
type scope struct {
	class *v1alpha1.MachineClass
	// hash is the hash of the class's current contents.
	hash string
	// machines are the class's machines that are not being deleted: the
	// cache's own objects, copied before they are changed.
	machines []*v1alpha1.Machine
	// driver serves the class; nil when none does (then nothing is called).
	driver *driver.Client
	log    logr.Logger
}
