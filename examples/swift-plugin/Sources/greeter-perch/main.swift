import Greeter
import PerchCLI
import PerchHost

#if canImport(Glibc)
    import Glibc
#endif

// Perch's whole command line (`run`, `check`, `dry-run`, `send`, ...) with the greeter plugin
// known beside Perch's own.
var registry = PluginRegistry.standard
registry.register(Greeter.self)
exit(await Perch.main(registry: registry))
