from evigraph.cli.main import main

raise SystemExit(main())
