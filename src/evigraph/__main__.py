from evigraph.cli import main

raise SystemExit(main())
