"""Files in, requests out: `apply -f` (`apply`), the `get|create|update` commands of
deployments and listeners (`commands`), and the logic they share (`editing`: a
document's kind, what it asks for, the diff that is sent; `planning`: the file formats;
`bodies`: reading files and naming the field a bad value is in)."""
