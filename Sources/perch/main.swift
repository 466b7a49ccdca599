import PerchCLI
import PerchHost

#if canImport(Glibc)
    import Glibc
#endif

// `perch`: the command line with Perch's own Swift plugins. A build with plugins of one's own has
// this same file with its own registry (docs/plugins.md).
exit(await Perch.main(registry: .standard))
