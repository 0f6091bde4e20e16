"""machina in-memory driver in Python: the Driver API served from another language.

Modules: :mod:`.server` (gRPC server, endpoint, shutdown), :mod:`.driver`
(the in-memory VMs and MachineService logic), :mod:`.validate` (request
checks), :mod:`.sanitize` (secret stripping) and :mod:`.errors`.
The generated stubs of package machina.driver.v1alpha1 must be importable
(main.py puts ../gen on sys.path).
"""
