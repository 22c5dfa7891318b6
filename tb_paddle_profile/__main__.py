import sys

from tb_paddle_profile.cli.commands import main

sys.exit(main())
