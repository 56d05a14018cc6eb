from olearn.frontends.console import main

# Guarded: worker processes started with multiprocessing's "spawn" (--dask local:N) import this
# module again, and must not run the command line.
if __name__ == "__main__":
    main()
