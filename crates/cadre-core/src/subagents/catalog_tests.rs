use super::*;

use crate::small_file::write_with_dirs as write;

fn agent(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nPrompt of {name}.\n")
}

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    sources: CatalogSources,
}

/// `root/repo` (a repository, with `sub/`), `root/data`, `root/home`, `root/managed`.
fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    fs::create_dir_all(root.join("repo/.git")).unwrap();
    fs::create_dir_all(root.join("repo/sub")).unwrap();
    let sources = CatalogSources {
        cwd: root.join("repo/sub"),
        data_dir: root.join("data"),
        // Plugin folders as the plugin loader would name them.
        plugin_agents: ["p", "tools-pack"]
            .iter()
            .map(|p| (p.to_string(), root.join(format!("data/plugins/{p}/agents"))))
            .collect(),
        home_dir: Some(root.join("home")),
        managed_dir: root.join("managed"),
        flag_json: None,
        enable_verification: false,
    };
    Env {
        _tmp: tmp,
        root,
        sources,
    }
}

fn sources_of(entry: &CatalogEntry) -> Vec<DefinitionSource> {
    std::iter::once(&entry.definition)
        .chain(&entry.shadows)
        .map(|d| d.source)
        .collect()
}

#[test]
fn precedence_across_all_sources() {
    let mut e = env();
    let r = &e.root;
    write(&r.join("managed/x.md"), &agent("a", "managed"));
    write(&r.join("repo/.claude/agents/x.md"), &agent("a", "repo"));
    write(&r.join("repo/.claude/agents/b.md"), &agent("b", "repo"));
    write(
        &r.join("repo/sub/.cadre/agents/deep/x.md"),
        &agent("b", "sub"),
    );
    write(&r.join("data/agents/x.md"), &agent("b", "user-cadre"));
    write(
        &r.join("home/.claude/agents/x.md"),
        &agent("b", "user-claude"),
    );
    write(
        &r.join("home/.claude/agents/c.md"),
        &agent("c", "user-claude"),
    );
    write(
        &r.join("home/.claude/agents/d.md"),
        &agent("general-purpose", "mine"),
    );
    e.sources.flag_json = Some(r#"{"a": {"description": "flag", "prompt": "p"}}"#.into());
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    assert!(cat.issues().is_empty(), "{:?}", cat.issues());

    assert_eq!(cat.get("a").unwrap().description, "managed");
    let b = cat
        .entries()
        .into_iter()
        .find(|e| e.definition.name == "b")
        .unwrap();
    assert_eq!(b.definition.description, "sub");
    assert_eq!(
        b.definition.path.as_deref(),
        Some(r.join("repo/sub/.cadre/agents/deep/x.md").as_path())
    );
    let shadowed: Vec<_> = b.shadows.iter().map(|d| d.description.as_str()).collect();
    assert_eq!(shadowed, vec!["repo", "user-cadre", "user-claude"]);
    assert_eq!(
        sources_of(b),
        vec![
            DefinitionSource::Project,
            DefinitionSource::Project,
            DefinitionSource::User,
            DefinitionSource::User
        ]
    );
    let a = cat
        .entries()
        .into_iter()
        .find(|e| e.definition.name == "a")
        .unwrap();
    assert_eq!(
        sources_of(a),
        vec![
            DefinitionSource::Managed,
            DefinitionSource::Flag,
            DefinitionSource::Project
        ]
    );
    assert_eq!(cat.get("c").unwrap().source, DefinitionSource::User);
    let gp = cat
        .entries()
        .into_iter()
        .find(|e| e.definition.name == "general-purpose")
        .unwrap();
    assert_eq!(gp.definition.description, "mine");
    assert_eq!(
        sources_of(gp),
        vec![DefinitionSource::User, DefinitionSource::Builtin]
    );

    assert_eq!(
        cat.names(),
        vec!["Explore", "Plan", "a", "b", "c", "general-purpose"]
    );
    let roster = cat.roster();
    assert_eq!(roster[2], ("a".to_string(), "managed".to_string()));
    // Case and separators are ignored when one name fits, as in Claude Code.
    assert_eq!(cat.get("A").map(|d| d.name.as_str()), Some("a"));
    assert_eq!(
        cat.get("general purpose").map(|d| d.name.as_str()),
        Some("general-purpose")
    );
    assert_eq!(
        cat.get("GENERAL_PURPOSE").map(|d| d.name.as_str()),
        Some("general-purpose")
    );
    assert!(cat.get("d").is_none() && cat.get(" ").is_none());
}

#[test]
fn cadre_beats_claude_in_the_same_dir() {
    let e = env();
    let r = &e.root;
    write(
        &r.join("repo/sub/.claude/agents/x.md"),
        &agent("x", "claude"),
    );
    write(&r.join("repo/sub/.cadre/agents/x.md"), &agent("x", "cadre"));
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    assert_eq!(cat.get("x").unwrap().description, "cadre");
    assert!(cat.issues().is_empty(), "{:?}", cat.issues());
}

#[test]
fn walking_stops_at_the_repository_root() {
    let e = env();
    let r = &e.root;
    write(
        &r.join(".claude/agents/above.md"),
        &agent("above", "outside"),
    );
    write(&r.join("repo/.claude/agents/in.md"), &agent("in", "inside"));
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    assert!(cat.get("above").is_none());
    assert!(cat.get("in").is_some());

    // Without a repository: only the working directory itself.
    let mut sources = e.sources.clone();
    fs::create_dir_all(r.join("norepo/sub")).unwrap();
    write(&r.join("norepo/.claude/agents/p.md"), &agent("parent", "p"));
    write(
        &r.join("norepo/sub/.claude/agents/s.md"),
        &agent("self", "s"),
    );
    sources.cwd = r.join("norepo/sub");
    let cat = DefinitionCatalog::load(&sources).unwrap();
    assert!(cat.get("parent").is_none());
    assert!(cat.get("self").is_some());

    // A `.git` file (worktree / submodule) also marks the root.
    fs::remove_dir_all(r.join("repo/.git")).unwrap();
    write(&r.join("repo/.git"), "gitdir: elsewhere\n");
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    assert!(cat.get("above").is_none());
    assert!(cat.get("in").is_some());
}

#[test]
fn home_claude_dir_is_user_not_project() {
    let mut e = env();
    let r = &e.root;
    write(&r.join("home/.claude/agents/x.md"), &agent("x", "d"));
    e.sources.cwd = r.join("home");
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    let entry = cat
        .entries()
        .into_iter()
        .find(|e| e.definition.name == "x")
        .unwrap();
    assert_eq!(entry.definition.source, DefinitionSource::User);
    assert!(entry.shadows.is_empty());
}

#[test]
fn plugins_are_namespaced_and_restricted() {
    let e = env();
    let r = &e.root;
    write(
        &r.join("data/plugins/tools-pack/agents/x.md"),
        "---\nname: linter\ndescription: d\npermissionMode: bypassPermissions\nhooks:\n  Stop: []\nmcpServers: [gh]\nmodel: haiku\n---\nb",
    );
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    let def = cat.get("tools-pack:linter").unwrap();
    assert_eq!(def.source, DefinitionSource::Plugin);
    assert!(def.permission_mode.is_none() && def.hooks.is_none() && def.mcp_servers.is_none());
    assert_eq!(def.model.as_deref(), Some("haiku"));
    assert!(cat.get("linter").is_none());
    let messages: Vec<_> = cat.issues().iter().map(|i| i.message.as_str()).collect();
    assert_eq!(
        messages,
        vec![
            "`permissionMode` is ignored in plugin agents",
            "`hooks` is ignored in plugin agents",
            "`mcpServers` is ignored in plugin agents"
        ]
    );
    assert!(cat.issues().iter().all(|i| i.level == IssueLevel::Warning));
}

#[test]
fn builtins_present_and_overridable() {
    let mut e = env();
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    assert_eq!(cat.names(), vec!["Explore", "Plan", "general-purpose"]);
    e.sources.enable_verification = true;
    write(
        &e.root.join("repo/.claude/agents/explore.md"),
        &agent("Explore", "my explore"),
    );
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    assert_eq!(
        cat.names(),
        vec!["Explore", "Plan", "Verification", "general-purpose"]
    );
    let explore = cat.entries()[0];
    assert_eq!(explore.definition.description, "my explore");
    assert_eq!(explore.definition.source, DefinitionSource::Project);
    assert!(!explore.definition.read_only);
    assert_eq!(explore.shadows.len(), 1);
    assert_eq!(explore.shadows[0].source, DefinitionSource::Builtin);
}

#[test]
fn duplicates_bad_files_and_docs() {
    let e = env();
    let dir = e.root.join("repo/.claude/agents");
    write(&dir.join("a.md"), &agent("dup", "first"));
    write(&dir.join("z/b.md"), &agent("dup", "second"));
    write(&dir.join("README.md"), "# Our agents\n");
    write(
        &dir.join("notes.txt"),
        "---\nname: txt\ndescription: d\n---\n",
    );
    write(
        &dir.join("broken.md"),
        "---\nname: broken\ndescription: d\n  bad: indent\n---\n",
    );
    write(&dir.join("noname.md"), "---\ndescription: d\n---\nb");
    write(&dir.join("good.md"), &agent("good", "fine"));
    fs::write(dir.join("bin.md"), [0xff, 0xfe, 0x00]).unwrap();
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    assert_eq!(cat.get("dup").unwrap().description, "first");
    assert!(cat.get("good").is_some());
    assert!(cat.get("txt").is_none() && cat.get("broken").is_none());
    let summary: Vec<_> = cat
        .issues()
        .iter()
        .map(|i| {
            let name = i.path.as_ref().unwrap().strip_prefix(&dir).unwrap();
            (name.display().to_string(), i.level)
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("README.md".to_string(), IssueLevel::Info),
            ("bin.md".to_string(), IssueLevel::Error),
            ("broken.md".to_string(), IssueLevel::Error),
            ("noname.md".to_string(), IssueLevel::Info),
            ("z/b.md".to_string(), IssueLevel::Warning),
        ]
    );
    let dup = cat.issues().last().unwrap();
    assert_eq!(
        dup.message,
        format!(
            "duplicate name `dup`, shadowed by {}",
            dir.join("a.md").display()
        )
    );
    let entry = cat
        .entries()
        .into_iter()
        .find(|e| e.definition.name == "dup")
        .unwrap();
    assert_eq!(entry.shadows.len(), 1);
}

#[cfg(unix)]
#[test]
fn symlinked_dirs_followed_without_looping() {
    let e = env();
    let dir = e.root.join("repo/.claude/agents");
    write(&e.root.join("shared/s.md"), &agent("shared", "d"));
    fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(e.root.join("shared"), dir.join("linked")).unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("loop")).unwrap();
    let cat = DefinitionCatalog::load(&e.sources).unwrap();
    assert!(cat.get("shared").is_some());
    assert!(cat.issues().is_empty(), "{:?}", cat.issues());
}

/// Sets the modification time of everything under `dir` a minute back, as
/// files look when they were not just edited.
fn age(dir: &Path) {
    let past = SystemTime::now() - Duration::from_secs(60);
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            age(&path);
        }
        fs::File::open(&path).unwrap().set_modified(past).unwrap();
    }
    fs::File::open(dir).unwrap().set_modified(past).unwrap();
}

#[test]
fn cache_rereads_only_when_a_file_changed() {
    let e = env();
    let r = &e.root;
    let file = r.join("repo/.claude/agents/a.md");
    write(&file, &agent("a", "first"));
    write(&r.join("data/agents/u.md"), &agent("u", "user"));
    age(r);
    let cache = CatalogCache::new(e.sources.clone());
    assert_eq!(cache.loads(), 0);
    let first = cache.get().unwrap();
    assert_eq!(first.get("a").unwrap().description, "first");
    let again = cache.get().unwrap();
    assert!(Arc::ptr_eq(&first, &again));
    assert_eq!(cache.loads(), 1, "unchanged: not re-read");

    // An edit in place, same length, is seen.
    write(&file, &agent("a", "again"));
    assert_eq!(cache.get().unwrap().get("a").unwrap().description, "again");
    assert_eq!(cache.loads(), 2);
    // Just written: a second edit could keep the same stamp, so the next
    // check re-reads too, until the file is older than the racy window.
    cache.get().unwrap();
    assert_eq!(cache.loads(), 3);
    age(r);
    cache.get().unwrap();
    cache.get().unwrap();
    assert_eq!(cache.loads(), 4);

    // A file in a directory that did not exist, and a removed file.
    write(&r.join("repo/sub/.cadre/agents/x/b.md"), &agent("b", "new"));
    fs::remove_file(r.join("data/agents/u.md")).unwrap();
    age(r);
    let changed = cache.get().unwrap();
    assert_eq!(changed.get("b").unwrap().description, "new");
    assert!(changed.get("u").is_none());
    assert_eq!(cache.loads(), 5);

    // A plugin appears, then the repository root moves up: both seen.
    write(&r.join("data/plugins/p/agents/c.md"), &agent("c", "plugin"));
    age(r);
    assert!(cache.get().unwrap().get("p:c").is_some());
    write(&r.join(".claude/agents/top.md"), &agent("top", "root"));
    age(r);
    assert!(cache.get().unwrap().get("top").is_none(), "above the root");
    fs::create_dir(r.join(".git")).unwrap();
    fs::remove_dir(r.join("repo/.git")).unwrap();
    assert!(cache.get().unwrap().get("top").is_some());
    assert_eq!(cache.loads(), 8);
    cache.get().unwrap();
    assert_eq!(cache.loads(), 8, "unchanged again");
}

#[test]
fn a_file_just_written_is_trusted_after_its_clock_tick() {
    let e = env();
    let file = e.root.join("repo/.claude/agents/a.md");
    write(&file, &agent("a", "fresh"));
    let cache = CatalogCache::new(e.sources.clone());
    cache.get().unwrap();
    cache.get().unwrap();
    assert_eq!(cache.loads(), 2, "just written: re-read");
    // A stamp with nanoseconds: its file system's tick is short, so a
    // load begun past the fine window is trusted.
    std::thread::sleep(FINE_RACY_WINDOW + Duration::from_millis(20));
    cache.get().unwrap();
    cache.get().unwrap();
    cache.get().unwrap();
    assert_eq!(cache.loads(), 3, "settled once past the fine window");

    // A whole-second stamp may come from a coarse clock: two seconds.
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap();
    let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(now.as_secs());
    fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(whole)
        .unwrap();
    cache.get().unwrap();
    assert_eq!(cache.loads(), 4, "the stamp changed");
    std::thread::sleep(FINE_RACY_WINDOW + Duration::from_millis(20));
    cache.get().unwrap();
    assert_eq!(
        cache.loads(),
        5,
        "a coarse stamp stays racy past the fine window"
    );
}

#[test]
fn bad_flag_json_is_an_error() {
    let mut e = env();
    e.sources.flag_json = Some("{".into());
    assert!(DefinitionCatalog::load(&e.sources).is_err());
    e.sources.flag_json = Some(r#"{"x": {"description": "d"}}"#.into());
    let err = DefinitionCatalog::load(&e.sources).unwrap_err();
    assert!(err.contains("`x`") && err.contains("`prompt`"), "{err}");
}

#[test]
fn validate_file_and_dir() {
    let e = env();
    let dir = e.root.join("v");
    write(&dir.join("a.md"), &agent("a", "d"));
    write(&dir.join("sub/b.md"), "---\nname: b\n---\n");
    write(&dir.join("sub/c.md"), &agent("a", "again"));
    let (defs, issues) = validate_path(&dir);
    assert_eq!(defs.len(), 2);
    let levels: Vec<_> = issues.iter().map(|i| i.level).collect();
    assert_eq!(levels, vec![IssueLevel::Error, IssueLevel::Warning]);
    assert!(issues[0].message.contains("no `description`"));
    assert!(issues[1].message.starts_with("duplicate name `a`"));

    let (defs, issues) = validate_path(&dir.join("a.md"));
    assert_eq!(defs.len(), 1);
    assert!(issues.is_empty());

    let (defs, issues) = validate_path(&dir.join("missing.md"));
    assert!(defs.is_empty());
    assert_eq!(issues[0].level, IssueLevel::Error);
}
