@preconcurrency import Glibc
import PerchCLI
import PerchHost

setvbuf(stdout, nil, _IOLBF, 0)
Allocator.tuneForHost()
signal(SIGPIPE, SIG_IGN)
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "run" || arguments.first == "dry-run" {
    exit(await RunCommand.run(arguments))
}
if let first = arguments.first, ["tail", "pins", "threads"].contains(first) {
    exit(await Perch.client(first, arguments))
}
if arguments.first == "check", arguments.contains("--connect") {
    exit(await Perch.checkConnected(arguments))
}
if arguments.first == "send" {
    exit(await Perch.send(arguments))
}
exit(Perch.main(arguments))
