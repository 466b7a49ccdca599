@preconcurrency import Glibc
import PerchCLI

setvbuf(stdout, nil, _IOLBF, 0)
exit(Perch.main(Array(CommandLine.arguments.dropFirst())))
