from reference.stacking.cli import main

main()
