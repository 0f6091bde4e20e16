#!/bin/sh
# User data sent in CreateMachineRequest.user_data for the VMs the suite
# creates. The core would have replaced <<MACHINE_NAME>> and
# <<BOOTSTRAP_TOKEN>> already; the suite sends the file as is.
echo "machina conformance VM"
