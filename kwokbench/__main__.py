from kwokbench.cli import app

app(prog_name="kwokbench")
