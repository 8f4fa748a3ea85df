"""`python -m kindling`: the same command line as the `kindling` script."""

from kindling.entry import main

if __name__ == "__main__":
    main()
