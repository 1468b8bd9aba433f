from senpai.cli.main import main

main()
