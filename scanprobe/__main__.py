from scanprobe.entry import main

if __name__ == "__main__":  # pragma: no cover
    main()
