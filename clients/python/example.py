import os

from spacekeeper import Client

sk = Client(os.environ["SPACEKEEPER_URL"], token_file=os.environ["SPACEKEEPER_TOKEN_FILE"])
user = os.environ.get("APP_USER", "alice")
sbx = sk.sandbox(user)  # an e2b.Sandbox, ready, attached with no provider call or key
print(sbx.commands.run(f"echo hello, {user}").stdout, end="")
sbx.files.write("/home/user/notes.txt", "written by the platform\n")
print(sbx.files.read("/home/user/notes.txt"), end="")
