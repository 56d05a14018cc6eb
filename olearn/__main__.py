from olearn.cli import main

main()
