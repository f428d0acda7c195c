"""GitOps on the dev cluster: Argo CD and Flux controllers and a git server beside it.

`DevCluster(gitops=True)` (`deployplane dev cluster up --gitops`) starts Argo CD's
application-controller and repo-server (with redis), Flux's source-controller and
kustomize-controller, and a git server on 127.0.0.1 serving every bare repository under
`<state-dir>/git/` at `<git_url>/<name>.git`; `gitops.json` in the state directory says
where (`read_info`). Nothing outside devcluster/ knows how they run: the rest of the
project sees Applications, Kustomizations and a git URL.
"""

from deployplane.devcluster.gitops.launch import (
    GIT_DIR,
    INFO_FILE,
    PROCESS_NAMES,
    WORK_DIR,
    GitOpsInfo,
    GitOpsLaunch,
    Ports,
    read_info,
)
from deployplane.devcluster.gitops.tools import GitOpsTools, find_gitops_root, find_gitops_tools

__all__ = [
    "GIT_DIR",
    "INFO_FILE",
    "PROCESS_NAMES",
    "WORK_DIR",
    "GitOpsInfo",
    "GitOpsLaunch",
    "GitOpsTools",
    "Ports",
    "find_gitops_root",
    "find_gitops_tools",
    "read_info",
]
