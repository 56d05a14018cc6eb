from olearn.console import main

main()
