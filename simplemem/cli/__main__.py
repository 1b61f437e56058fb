from simplemem.cli.main import main

main()
