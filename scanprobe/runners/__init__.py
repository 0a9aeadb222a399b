"""Running user targets: in a child process, supervised for memory and time."""
