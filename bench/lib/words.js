'use strict';
/**
 * Vocabulary for the benchmark corpus, roughly in order of frequency. The first block is
 * English function words (they dominate real text and are what makes naive FTS queries slow);
 * then general and software words an agent would write into its memory. A deterministic
 * synthetic long tail (see corpus.js) is appended so rare words exist too.
 */
const STOP = `
the of and to a in is that for it on with as was be this are by at not from or have an
but they which you we were all their has one there been had more will would can what when who
so if about out up into than them its some only other then also do does did how our these may
should could any after first most over such where just new very through because each those
between both many same under while before being here much own again off why few
`;

const CONTENT = `
user project agent memory data file code test service api server request response error config
time system value function model team query search index token database change build release
deploy deployment version update issue result client support feature problem note decision task
key review document design process run log list message path type field default session cache
performance network store storage object bucket queue worker job schedule backup restore migration
schema table column record row page limit offset cursor filter sort order rank score word phrase
prefer preference choose chosen option setting environment variable secret password login account
admin role permission scope access policy rule security audit monitor metric alert incident outage
latency throughput memory cpu disk thread process container image cluster node pod region zone
python typescript javascript node rust golang java sql bash docker kubernetes terraform nginx
postgres mongodb sqlite redis kafka rabbitmq elasticsearch s3 lambda cloudflare vercel github
branch merge commit pull push rebase conflict pipeline workflow action runner artifact package
dependency library framework module component interface class method property argument return
async await promise callback event stream buffer encode decode parse format json yaml markdown
html css layout style theme font color button form input output dialog modal menu sidebar header
footer mobile desktop browser chrome firefox safari keyboard shortcut editor terminal shell
customer meeting call email calendar deadline sprint roadmap milestone estimate priority blocker
bug fix patch hotfix regression rollback revert flaky retry timeout backoff throttle rate quota
budget cost invoice billing payment subscription plan trial upgrade downgrade cancel refund
report dashboard chart graph table export import upload download attachment link reference
summary context conversation question answer explanation example pattern guideline convention
naming lint format prettier eslint jest vitest playwright coverage benchmark profile trace span
prompt completion embedding vector retrieval ranking relevance recall precision evaluation dataset
training inference finetune tokenizer context window temperature sampling streaming tool plugin
weekly daily monthly morning evening weekend holiday vacation office remote hybrid timezone utc
alice bob carol dave erin frank grace heidi ivan judy mallory oscar peggy trent victor walter
london berlin paris tokyo sydney toronto austin seattle dublin amsterdam singapore bangalore
coffee tea lunch dinner breakfast gym running cycling reading music podcast movie travel flight
hotel train airport passport visa ticket booking reservation restaurant vegetarian vegan allergy
always never usually often sometimes rarely prefers likes dislikes wants needs asked said told
agreed decided rejected approved blocked waiting pending done started finished failed succeeded
slow fast large small empty full broken stable unstable legacy modern internal external public
private shared local global remote primary secondary readonly writable nullable optional required
concise verbose formal casual detailed short long clear ambiguous correct wrong outdated current
create read write delete remove insert replace rename move copy clone fetch send receive handle
validate verify check ensure compute calculate measure compare optimize refactor migrate upgrade
configure install uninstall enable disable start stop restart reload reset clear flush sync
`;

module.exports = {
  STOP_WORDS: STOP.split(/\s+/).filter(Boolean),
  CONTENT_WORDS: [...new Set(CONTENT.split(/\s+/).filter(Boolean))],
  TAGS: `backend frontend infra ops security auth perf bug feature docs testing ci release database
search api ux design billing customer meeting decision todo idea research ml llm prompt agent
devops monitoring logging onboarding hiring planning retro incident postmortem oncall mobile web
python typescript go rust sql docker k8s aws gcp azure cost legal compliance privacy gdpr
accessibility i18n analytics growth marketing sales support partner vendor roadmap q1 q2 q3 q4`
    .split(/\s+/)
    .filter(Boolean),
  AGENTS: ['claude-code', 'cursor', 'codex', 'aider', 'research-bot', 'support-bot', 'planner', 'reviewer', 'ops-agent', 'writer', 'scheduler', 'triage'],
  PROJECTS: `memory-store atlas borealis cobalt delta-api ember falcon granite harbor iris juniper kestrel
lumen meridian nimbus onyx pioneer quartz redwood sierra tundra umbra vertex willow xenon yarrow
zephyr apollo beacon cascade dynamo echo fjord glacier helix ion jetstream kepler lattice`
    .split(/\s+/)
    .filter(Boolean),
};
