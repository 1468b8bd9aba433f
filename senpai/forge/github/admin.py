"""The GitHub adapter's admin part: what `senpai preflight`, init and the demo check or set up once
(the port's `ForgeAdmin`), and `create_repository`."""

from github import GithubException

from senpai.config.harness import ForgeSettings
from senpai.forge.base import Access, LabelSpec
from senpai.forge.github.http import GitHubHttp


class GitHubAdmin:
    """`ForgeAdmin` over the repository of `http`."""

    def __init__(self, http: GitHubHttp) -> None:
        self.settings = http.settings
        self._http, self._repo = http, http.repo

    def access(self) -> Access:
        """Who the token is and what it may do on the repository.

        GitHub REST: GET /repos/{o}/{r} (its `permissions`, and the X-OAuth-Scopes response header
        that classic tokens get; fine-grained tokens and the local forge send none). Raises
        NotFound if the repository does not exist or the token cannot see it.
        """

        def run() -> Access:
            perms = self._http.gh.get_repo(self.settings.repo, lazy=False).permissions
            return Access(
                login=self._http.login,
                scopes=self._http.gh.oauth_scopes,
                push=bool(perms and perms.push),
                admin=bool(perms and perms.admin),
            )

        return self._http.call("get repository", run)

    def ensure_labels(self, labels: dict[str, LabelSpec]) -> list[str]:
        """Create each missing repository label (name -> colour and description); existing ones are
        left alone.

        Returns the names it created. GitHub REST: GET /repos/{o}/{r}/labels (`list_labels`), then
        POST /repos/{o}/{r}/labels for each missing one (422 = created meanwhile).
        """
        existing = self.list_labels()

        def create(name: str, spec: LabelSpec) -> bool:
            try:
                self._repo.create_label(name, spec.color, spec.description)
            except GithubException as exc:
                if exc.status != 422:  # 422: already exists
                    raise
                return False
            return True

        missing = {name: spec for name, spec in labels.items() if name not in existing}
        call = self._http.call
        return [name for name, spec in missing.items() if call(f"create label {name}", lambda n=name, s=spec: create(n, s))]

    def list_labels(self) -> dict[str, LabelSpec]:
        """The repository's labels. GitHub REST: GET /repos/{o}/{r}/labels (every page)."""

        def run() -> dict[str, LabelSpec]:
            return {x.name: LabelSpec(color=x.color.lower(), description=x.description or "") for x in self._repo.get_labels()}

        return self._http.call("list labels", run)


def create_repository(settings: ForgeSettings, token: str | None, name: str, private: bool = False) -> str:
    """Create `name` under the owner of `settings.repo` (a user or an org) and return its clone URL.

    GitHub REST: POST /user/repos (or POST /orgs/{org}/repos).  "Already exists" (422) counts as
    success.  Raises TransientError, PermanentError.
    """
    owner = settings.repo.split("/", 1)[0]
    http = GitHubHttp(settings.model_copy(update={"repo": f"{owner}/{name}"}), token)

    def create() -> str:
        try:
            if http.login == owner:
                return http.gh.get_user().create_repo(name, private=private).clone_url
            return http.gh.get_organization(owner).create_repo(name, private=private).clone_url
        except GithubException as exc:
            if exc.status != 422:
                raise
            return http.repo.clone_url

    return http.call(f"create repository {owner}/{name}", create)
