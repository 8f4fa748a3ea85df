"""`python -m kindling`: the same command line as the `kindling` script."""

from kindling.cli import main

if __name__ == "__main__":
    main()
