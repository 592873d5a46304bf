from premath.cli import main

main()
