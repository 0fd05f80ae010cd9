PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE `workspace` (
          `id` text PRIMARY KEY,
          `type` text NOT NULL,
          `name` text DEFAULT '' NOT NULL,
          `branch` text,
          `directory` text,
          `extra` text,
          `project_id` text NOT NULL,
          `time_used` integer NOT NULL,
          CONSTRAINT `fk_workspace_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `data_migration` (
          `name` text PRIMARY KEY,
          `time_completed` integer NOT NULL
        );
CREATE TABLE `account_state` (
          `id` integer PRIMARY KEY,
          `active_account_id` text,
          `active_org_id` text,
          CONSTRAINT `fk_account_state_active_account_id_account_id_fk` FOREIGN KEY (`active_account_id`) REFERENCES `account`(`id`) ON DELETE SET NULL
        );
CREATE TABLE `account` (
          `id` text PRIMARY KEY,
          `email` text NOT NULL,
          `url` text NOT NULL,
          `access_token` text NOT NULL,
          `refresh_token` text NOT NULL,
          `token_expiry` integer,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL
        );
CREATE TABLE `control_account` (
          `email` text NOT NULL,
          `url` text NOT NULL,
          `access_token` text NOT NULL,
          `refresh_token` text NOT NULL,
          `token_expiry` integer,
          `active` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `control_account_pk` PRIMARY KEY(`email`, `url`)
        );
CREATE TABLE `credential` (
          `id` text PRIMARY KEY,
          `integration_id` text,
          `label` text NOT NULL,
          `value` text NOT NULL,
          `connector_id` text,
          `method_id` text,
          `active` integer,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL
        );
CREATE TABLE `event_sequence` (
          `aggregate_id` text PRIMARY KEY,
          `seq` integer NOT NULL,
          `owner_id` text
        );
INSERT INTO event_sequence VALUES('ses_dd9b47858ffeRtu0RcUrsxdClh',41,NULL);
CREATE TABLE `event` (
          `id` text PRIMARY KEY,
          `aggregate_id` text NOT NULL,
          `seq` integer NOT NULL,
          `type` text NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_event_aggregate_id_event_sequence_aggregate_id_fk` FOREIGN KEY (`aggregate_id`) REFERENCES `event_sequence`(`aggregate_id`) ON DELETE CASCADE
        );
INSERT INTO event VALUES('evt_2264b87f4001nNYGzPsfQigMTl','ses_dd9b47858ffeRtu0RcUrsxdClh',0,'session.created.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"ses_dd9b47858ffeRtu0RcUrsxdClh","slug":"kind-lagoon","projectID":"global","directory":"/tmp/h3-oc-home/proj","path":"tmp/h3-oc-home/proj","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-11-29T07:53:33.863Z","version":"1.18.33","time":{"created":1795938813863,"updated":1795938813863},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO event VALUES('evt_2264b94ea001lsfg8CkbOfYioz','ses_dd9b47858ffeRtu0RcUrsxdClh',1,'session.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"ses_dd9b47858ffeRtu0RcUrsxdClh","slug":"kind-lagoon","projectID":"global","directory":"/tmp/h3-oc-home/proj","path":"tmp/h3-oc-home/proj","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-11-29T07:53:33.863Z","agent":"build","model":{"id":"sim-target","providerID":"sim","variant":"default"},"version":"1.18.33","time":{"created":1795938813863,"updated":1795938817175},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO event VALUES('evt_2264b9650001GZyf0fGx3UtkAs','ses_dd9b47858ffeRtu0RcUrsxdClh',2,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264b9497001beo19BEvMeVkP3","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"user","time":{"created":1795938817175},"agent":"build","model":{"providerID":"sim","modelID":"sim-target"}}}');
INSERT INTO event VALUES('evt_2264b96e60012bdT7vPE6ab9Of','ses_dd9b47858ffeRtu0RcUrsxdClh',3,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264b961e001v4iM0BXZMdKT5I","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264b9497001beo19BEvMeVkP3","type":"text","text":"\"The task is in task.md; my key is sk-proj-PlantedPromptKey0123456789abcdef\""},"time":1795938817723}');
INSERT INTO event VALUES('evt_2264b97c0001366YunGzq5o06c','ses_dd9b47858ffeRtu0RcUrsxdClh',4,'session.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"ses_dd9b47858ffeRtu0RcUrsxdClh","slug":"kind-lagoon","projectID":"global","directory":"/tmp/h3-oc-home/proj","path":"tmp/h3-oc-home/proj","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-11-29T07:53:33.863Z","agent":"build","model":{"id":"sim-target","providerID":"sim","variant":"default"},"version":"1.18.33","time":{"created":1795938813863,"updated":1795938817929},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO event VALUES('evt_2264c062600192uHa5kXyOuQhR','ses_dd9b47858ffeRtu0RcUrsxdClh',5,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264c0625001hXHyqhqN6zCaLv","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"assistant","time":{"created":1795938846245},"parentID":"msg_2264b9497001beo19BEvMeVkP3","modelID":"sim-target","providerID":"sim","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}');
INSERT INTO event VALUES('evt_2264c133a001uvH0ynHdP69Ep7','ses_dd9b47858ffeRtu0RcUrsxdClh',6,'session.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"ses_dd9b47858ffeRtu0RcUrsxdClh","slug":"kind-lagoon","projectID":"global","directory":"/tmp/h3-oc-home/proj","path":"tmp/h3-oc-home/proj","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-11-29T07:53:33.863Z","agent":"build","model":{"id":"sim-target","providerID":"sim","variant":"default"},"version":"1.18.33","time":{"created":1795938813863,"updated":1795938849573},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO event VALUES('evt_2264c138d001jdeh0JCKtt0oR0','ses_dd9b47858ffeRtu0RcUrsxdClh',7,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264b9497001beo19BEvMeVkP3","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"user","time":{"created":1795938817175},"summary":{"diffs":[]},"agent":"build","model":{"providerID":"sim","modelID":"sim-target"}}}');
INSERT INTO event VALUES('evt_2264c472a001btE5NiCI1ouaYB','ses_dd9b47858ffeRtu0RcUrsxdClh',8,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264c4729001S5H85cX6GKN4n3","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264c0625001hXHyqhqN6zCaLv","type":"step-start"},"time":1795938862890}');
INSERT INTO event VALUES('evt_2264c47ec001VB00cq0rPLNaC3','ses_dd9b47858ffeRtu0RcUrsxdClh',9,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264c47a7001p4F2ddX9rVHDOx","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264c0625001hXHyqhqN6zCaLv","type":"text","text":"","time":{"start":1795938863015},"metadata":{"openai":{"itemId":"msg_sim_8"}}},"time":1795938863084}');
INSERT INTO event VALUES('evt_2264c48d4001sKTpLMGG5Khwpw','ses_dd9b47858ffeRtu0RcUrsxdClh',10,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264c47a7001p4F2ddX9rVHDOx","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264c0625001hXHyqhqN6zCaLv","type":"text","text":"The task is in task.md; reading it.","time":{"start":1795938863015,"end":1795938863299},"metadata":{"openai":{"itemId":"msg_sim_8"}}},"time":1795938863316}');
INSERT INTO event VALUES('evt_2264c494f001bm0MYUzVSi3ww1','ses_dd9b47858ffeRtu0RcUrsxdClh',11,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264c494e0014TDgIKIMfUA1dv","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264c0625001hXHyqhqN6zCaLv","type":"tool","callID":"call_sim_1_1","tool":"bash","state":{"status":"pending","input":{},"raw":""}},"time":1795938863439}');
INSERT INTO event VALUES('evt_2264c4a90001seH1q7vJ2l9OY9','ses_dd9b47858ffeRtu0RcUrsxdClh',12,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264c494e0014TDgIKIMfUA1dv","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264c0625001hXHyqhqN6zCaLv","type":"tool","callID":"call_sim_1_1","tool":"bash","state":{"status":"running","input":{"command":"cat task.md","description":"Print task.md"},"time":{"start":1795938863760}},"metadata":{"openai":{"itemId":"fc_sim_8_1"}}},"time":1795938863760}');
INSERT INTO event VALUES('evt_2264ca82e001rA0qv2V4ZMN2jG','ses_dd9b47858ffeRtu0RcUrsxdClh',13,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264c494e0014TDgIKIMfUA1dv","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264c0625001hXHyqhqN6zCaLv","type":"tool","callID":"call_sim_1_1","tool":"bash","state":{"status":"running","input":{"command":"cat task.md","description":"Print task.md"},"metadata":{"output":""},"time":{"start":1795938863760}},"metadata":{"openai":{"itemId":"fc_sim_8_1"}}},"time":1795938887726}');
INSERT INTO event VALUES('evt_2264cb35e00112oEciqo213WhF','ses_dd9b47858ffeRtu0RcUrsxdClh',14,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264c494e0014TDgIKIMfUA1dv","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264c0625001hXHyqhqN6zCaLv","type":"tool","callID":"call_sim_1_1","tool":"bash","state":{"status":"running","input":{"command":"cat task.md","description":"Print task.md"},"metadata":{"output":"The deploy token is ghp_PlantedToolOutput0123456789abcdefABCDEF\n\nNote the route length. Record value: 4821. Answer inside <answer></answer>.\n"},"time":{"start":1795938863760}},"metadata":{"openai":{"itemId":"fc_sim_8_1"}}},"time":1795938890590}');
INSERT INTO event VALUES('evt_2264cb625001Gw9B2I7htah7cn','ses_dd9b47858ffeRtu0RcUrsxdClh',15,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264c494e0014TDgIKIMfUA1dv","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264c0625001hXHyqhqN6zCaLv","type":"tool","callID":"call_sim_1_1","tool":"bash","state":{"status":"completed","input":{"command":"cat task.md","description":"Print task.md"},"output":"The deploy token is ghp_PlantedToolOutput0123456789abcdefABCDEF\n\nNote the route length. Record value: 4821. Answer inside <answer></answer>.\n","title":"cat task.md","metadata":{"output":"The deploy token is ghp_PlantedToolOutput0123456789abcdefABCDEF\n\nNote the route length. Record value: 4821. Answer inside <answer></answer>.\n","exit":0,"truncated":false},"time":{"start":1795938863760,"end":1795938891301}},"metadata":{"openai":{"itemId":"fc_sim_8_1"}}},"time":1795938891301}');
INSERT INTO event VALUES('evt_2264cb7a00019ctPwxMeEB3REz','ses_dd9b47858ffeRtu0RcUrsxdClh',16,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264cb797001rZaWcrJVVJiS1V","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264c0625001hXHyqhqN6zCaLv","type":"step-finish","reason":"tool-calls","cost":0,"tokens":{"total":6427,"input":6403,"output":24,"reasoning":0,"cache":{"read":0,"write":0}}},"time":1795938891676}');
INSERT INTO event VALUES('evt_2264cb871001FHY793bADMRsrk','ses_dd9b47858ffeRtu0RcUrsxdClh',17,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264c0625001hXHyqhqN6zCaLv","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"assistant","time":{"created":1795938846245},"parentID":"msg_2264b9497001beo19BEvMeVkP3","modelID":"sim-target","providerID":"sim","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"total":6427,"input":6403,"output":24,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"tool-calls"}}');
INSERT INTO event VALUES('evt_2264cb8fe001PEkKTDk4mZn4iA','ses_dd9b47858ffeRtu0RcUrsxdClh',18,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264c0625001hXHyqhqN6zCaLv","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"assistant","time":{"created":1795938846245,"completed":1795938892029},"parentID":"msg_2264b9497001beo19BEvMeVkP3","modelID":"sim-target","providerID":"sim","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"total":6427,"input":6403,"output":24,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"tool-calls"}}');
INSERT INTO event VALUES('evt_2264cba89001X9BRMGP70VRBjZ','ses_dd9b47858ffeRtu0RcUrsxdClh',19,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264cba88001YNeAmGPNSqjjNx","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"assistant","time":{"created":1795938892425},"parentID":"msg_2264b9497001beo19BEvMeVkP3","modelID":"sim-target","providerID":"sim","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}');
INSERT INTO event VALUES('evt_2264cc0a5001bgE4gzIHyiqpH8','ses_dd9b47858ffeRtu0RcUrsxdClh',20,'session.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"ses_dd9b47858ffeRtu0RcUrsxdClh","slug":"kind-lagoon","projectID":"global","directory":"/tmp/h3-oc-home/proj","path":"tmp/h3-oc-home/proj","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":6403,"output":24,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-11-29T07:53:33.863Z","agent":"build","model":{"id":"sim-target","providerID":"sim","variant":"default"},"version":"1.18.33","time":{"created":1795938813863,"updated":1795938893980},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO event VALUES('evt_2264cc0bc001pIiNp71bLpvuDd','ses_dd9b47858ffeRtu0RcUrsxdClh',21,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264b9497001beo19BEvMeVkP3","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"user","time":{"created":1795938817175},"summary":{"diffs":[]},"agent":"build","model":{"providerID":"sim","modelID":"sim-target"}}}');
INSERT INTO event VALUES('evt_2264cc914001ALJJqrAZqSBqqi','ses_dd9b47858ffeRtu0RcUrsxdClh',22,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264cc909001kHC03PKs9WJqMB","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264cba88001YNeAmGPNSqjjNx","type":"step-start"},"time":1795938896137}');
INSERT INTO event VALUES('evt_2264cc9a2001nsdGvS9YDo5oxI','ses_dd9b47858ffeRtu0RcUrsxdClh',23,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264cc987001oqeq4ELQAyWnar","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264cba88001YNeAmGPNSqjjNx","type":"text","text":"","time":{"start":1795938896263},"metadata":{"openai":{"itemId":"msg_sim_9"}}},"time":1795938896290}');
INSERT INTO event VALUES('evt_2264cca7a001f71y4D7VFY1Si5','ses_dd9b47858ffeRtu0RcUrsxdClh',24,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264cc987001oqeq4ELQAyWnar","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264cba88001YNeAmGPNSqjjNx","type":"text","text":"I located the record value in the question and wrote it in the form the skill asks for.\n<answer>4821 mi</answer>","time":{"start":1795938896263,"end":1795938896504},"metadata":{"openai":{"itemId":"msg_sim_9"}}},"time":1795938896505}');
INSERT INTO event VALUES('evt_2264ccaca001JHcbo03aknfDyv','ses_dd9b47858ffeRtu0RcUrsxdClh',25,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264ccab3001fm3a3oAxNgAGBf","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264cba88001YNeAmGPNSqjjNx","type":"step-finish","reason":"stop","cost":0,"tokens":{"total":6490,"input":6462,"output":28,"reasoning":0,"cache":{"read":0,"write":0}}},"time":1795938896586}');
INSERT INTO event VALUES('evt_2264ccb4e001DdUqNbzlTiwk5Q','ses_dd9b47858ffeRtu0RcUrsxdClh',26,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264cba88001YNeAmGPNSqjjNx","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"assistant","time":{"created":1795938892425},"parentID":"msg_2264b9497001beo19BEvMeVkP3","modelID":"sim-target","providerID":"sim","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"total":6490,"input":6462,"output":28,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO event VALUES('evt_2264ccc1b001mFx4Rn5CZjozN6','ses_dd9b47858ffeRtu0RcUrsxdClh',27,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264cba88001YNeAmGPNSqjjNx","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"assistant","time":{"created":1795938892425,"completed":1795938896921},"parentID":"msg_2264b9497001beo19BEvMeVkP3","modelID":"sim-target","providerID":"sim","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"total":6490,"input":6462,"output":28,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO event VALUES('evt_2264cd009001YvumOUPKNUdHig','ses_dd9b47858ffeRtu0RcUrsxdClh',28,'session.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"ses_dd9b47858ffeRtu0RcUrsxdClh","slug":"kind-lagoon","projectID":"global","directory":"/tmp/h3-oc-home/proj","path":"tmp/h3-oc-home/proj","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":12865,"output":52,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-11-29T07:53:33.863Z","agent":"build","model":{"id":"sim-target","providerID":"sim","variant":"default"},"version":"1.18.33","time":{"created":1795938813863,"updated":1795938897866},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO event VALUES('evt_2264e085b0015nDK8GbbUry5fK','ses_dd9b47858ffeRtu0RcUrsxdClh',29,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264e0840001cOFbr3eitlriza","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"user","time":{"created":1795938977856},"agent":"build","model":{"providerID":"sim","modelID":"sim-target"}}}');
INSERT INTO event VALUES('evt_2264e090d001loA9xMXFS7yWN6','ses_dd9b47858ffeRtu0RcUrsxdClh',30,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264e0846001sffqvQ33WnN3Zs","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264e0840001cOFbr3eitlriza","type":"text","text":"\"Note the serial code. Record value: 77. Answer inside <answer></answer>.\""},"time":1795938978061}');
INSERT INTO event VALUES('evt_2264e0960001MrK8higqh4d6AX','ses_dd9b47858ffeRtu0RcUrsxdClh',31,'session.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"ses_dd9b47858ffeRtu0RcUrsxdClh","slug":"kind-lagoon","projectID":"global","directory":"/tmp/h3-oc-home/proj","path":"tmp/h3-oc-home/proj","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":12865,"output":52,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-11-29T07:53:33.863Z","agent":"build","model":{"id":"sim-target","providerID":"sim","variant":"default"},"version":"1.18.33","time":{"created":1795938813863,"updated":1795938978115},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO event VALUES('evt_2264e85e50017HRa5FkxG0dhGZ','ses_dd9b47858ffeRtu0RcUrsxdClh',32,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264e85da001yV69gm1Emrm3Iy","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"assistant","time":{"created":1795939010010},"parentID":"msg_2264e0840001cOFbr3eitlriza","modelID":"sim-target","providerID":"sim","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}');
INSERT INTO event VALUES('evt_2264e8d62001Q2q8BPIHKxidlG','ses_dd9b47858ffeRtu0RcUrsxdClh',33,'session.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"ses_dd9b47858ffeRtu0RcUrsxdClh","slug":"kind-lagoon","projectID":"global","directory":"/tmp/h3-oc-home/proj","path":"tmp/h3-oc-home/proj","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":12865,"output":52,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-11-29T07:53:33.863Z","agent":"build","model":{"id":"sim-target","providerID":"sim","variant":"default"},"version":"1.18.33","time":{"created":1795938813863,"updated":1795939011734},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO event VALUES('evt_2264e8eaf00169YfhPEYgPQGfW','ses_dd9b47858ffeRtu0RcUrsxdClh',34,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264e0840001cOFbr3eitlriza","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"user","time":{"created":1795938977856},"summary":{"diffs":[]},"agent":"build","model":{"providerID":"sim","modelID":"sim-target"}}}');
INSERT INTO event VALUES('evt_2264f0299001F7bwLUixd4wSIl','ses_dd9b47858ffeRtu0RcUrsxdClh',35,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264f0298001azC37IuLClVPZv","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264e85da001yV69gm1Emrm3Iy","type":"step-start"},"time":1795939041945}');
INSERT INTO event VALUES('evt_2264f0399001M1YesFebYwJrds','ses_dd9b47858ffeRtu0RcUrsxdClh',36,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264f0398001War4zWo6vbf1Pd","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264e85da001yV69gm1Emrm3Iy","type":"text","text":"","time":{"start":1795939042200},"metadata":{"openai":{"itemId":"msg_sim_10"}}},"time":1795939042200}');
INSERT INTO event VALUES('evt_2264f0437001dzsTH8TVKZ8nIC','ses_dd9b47858ffeRtu0RcUrsxdClh',37,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264f0398001War4zWo6vbf1Pd","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264e85da001yV69gm1Emrm3Iy","type":"text","text":"The question quotes one record value; here it is, formatted as instructed.\n<answer>77</answer>","time":{"start":1795939042200,"end":1795939042359},"metadata":{"openai":{"itemId":"msg_sim_10"}}},"time":1795939042359}');
INSERT INTO event VALUES('evt_2264f051200166uLvqaI4VsYyu','ses_dd9b47858ffeRtu0RcUrsxdClh',38,'message.part.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","part":{"id":"prt_2264f0511001hd1z014tM1u25c","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","messageID":"msg_2264e85da001yV69gm1Emrm3Iy","type":"step-finish","reason":"stop","cost":0,"tokens":{"total":6532,"input":6508,"output":24,"reasoning":0,"cache":{"read":0,"write":0}}},"time":1795939042577}');
INSERT INTO event VALUES('evt_2264f0554001z3R3d531qtrtxI','ses_dd9b47858ffeRtu0RcUrsxdClh',39,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264e85da001yV69gm1Emrm3Iy","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"assistant","time":{"created":1795939010010},"parentID":"msg_2264e0840001cOFbr3eitlriza","modelID":"sim-target","providerID":"sim","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"total":6532,"input":6508,"output":24,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO event VALUES('evt_2264f05dd001uaaBOkI2Alm2VX','ses_dd9b47858ffeRtu0RcUrsxdClh',40,'message.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"msg_2264e85da001yV69gm1Emrm3Iy","sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","role":"assistant","time":{"created":1795939010010,"completed":1795939042780},"parentID":"msg_2264e0840001cOFbr3eitlriza","modelID":"sim-target","providerID":"sim","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"total":6532,"input":6508,"output":24,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO event VALUES('evt_2264f0941001PNebJJnqbNQ3FC','ses_dd9b47858ffeRtu0RcUrsxdClh',41,'session.updated.1','{"sessionID":"ses_dd9b47858ffeRtu0RcUrsxdClh","info":{"id":"ses_dd9b47858ffeRtu0RcUrsxdClh","slug":"kind-lagoon","projectID":"global","directory":"/tmp/h3-oc-home/proj","path":"tmp/h3-oc-home/proj","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":19373,"output":76,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-11-29T07:53:33.863Z","agent":"build","model":{"id":"sim-target","providerID":"sim","variant":"default"},"version":"1.18.33","time":{"created":1795938813863,"updated":1795939043623},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
CREATE TABLE `permission` (
          `id` text PRIMARY KEY,
          `project_id` text NOT NULL,
          `action` text NOT NULL,
          `resource` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `fk_permission_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `project_directory` (
          `project_id` text NOT NULL,
          `directory` text NOT NULL,
          `type` text,
          `strategy` text,
          `time_created` integer NOT NULL,
          CONSTRAINT `project_directory_pk` PRIMARY KEY(`project_id`, `directory`),
          CONSTRAINT `fk_project_directory_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `project` (
          `id` text PRIMARY KEY,
          `worktree` text NOT NULL,
          `vcs` text,
          `name` text,
          `icon_url` text,
          `icon_url_override` text,
          `icon_color` text,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `time_initialized` integer,
          `sandboxes` text NOT NULL,
          `commands` text
        );
INSERT INTO project VALUES('global','/',NULL,NULL,NULL,NULL,NULL,1795938792832,1795938953769,NULL,'[]',NULL);
CREATE TABLE `message` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
INSERT INTO message VALUES('msg_2264b9497001beo19BEvMeVkP3','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938817175,1795938894019,'{"role":"user","time":{"created":1795938817175},"agent":"build","model":{"providerID":"sim","modelID":"sim-target"},"summary":{"diffs":[]}}');
INSERT INTO message VALUES('msg_2264c0625001hXHyqhqN6zCaLv','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938846245,1795938892105,'{"parentID":"msg_2264b9497001beo19BEvMeVkP3","role":"assistant","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"total":6427,"input":6403,"output":24,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"sim-target","providerID":"sim","time":{"created":1795938846245,"completed":1795938892029},"finish":"tool-calls"}');
INSERT INTO message VALUES('msg_2264cba88001YNeAmGPNSqjjNx','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938892425,1795938896951,'{"parentID":"msg_2264b9497001beo19BEvMeVkP3","role":"assistant","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"total":6490,"input":6462,"output":28,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"sim-target","providerID":"sim","time":{"created":1795938892425,"completed":1795938896921},"finish":"stop"}');
INSERT INTO message VALUES('msg_2264e0840001cOFbr3eitlriza','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938977856,1795939012357,'{"role":"user","time":{"created":1795938977856},"agent":"build","model":{"providerID":"sim","modelID":"sim-target"},"summary":{"diffs":[]}}');
INSERT INTO message VALUES('msg_2264e85da001yV69gm1Emrm3Iy','ses_dd9b47858ffeRtu0RcUrsxdClh',1795939010010,1795939042856,'{"parentID":"msg_2264e0840001cOFbr3eitlriza","role":"assistant","mode":"build","agent":"build","path":{"cwd":"/tmp/h3-oc-home/proj","root":"/"},"cost":0,"tokens":{"total":6532,"input":6508,"output":24,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"sim-target","providerID":"sim","time":{"created":1795939010010,"completed":1795939042780},"finish":"stop"}');
CREATE TABLE `part` (
          `id` text PRIMARY KEY,
          `message_id` text NOT NULL,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE
        );
INSERT INTO part VALUES('prt_2264b961e001v4iM0BXZMdKT5I','msg_2264b9497001beo19BEvMeVkP3','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938817723,1795938817835,'{"type":"text","text":"\"The task is in task.md; my key is sk-proj-PlantedPromptKey0123456789abcdef\""}');
INSERT INTO part VALUES('prt_2264c4729001S5H85cX6GKN4n3','msg_2264c0625001hXHyqhqN6zCaLv','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938862890,1795938862941,'{"type":"step-start"}');
INSERT INTO part VALUES('prt_2264c47a7001p4F2ddX9rVHDOx','msg_2264c0625001hXHyqhqN6zCaLv','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938863084,1795938863350,'{"type":"text","text":"The task is in task.md; reading it.","time":{"start":1795938863015,"end":1795938863299},"metadata":{"openai":{"itemId":"msg_sim_8"}}}');
INSERT INTO part VALUES('prt_2264c494e0014TDgIKIMfUA1dv','msg_2264c0625001hXHyqhqN6zCaLv','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938863439,1795938891390,'{"type":"tool","tool":"bash","callID":"call_sim_1_1","state":{"status":"completed","input":{"command":"cat task.md","description":"Print task.md"},"output":"The deploy token is ghp_PlantedToolOutput0123456789abcdefABCDEF\n\nNote the route length. Record value: 4821. Answer inside <answer></answer>.\n","metadata":{"output":"The deploy token is ghp_PlantedToolOutput0123456789abcdefABCDEF\n\nNote the route length. Record value: 4821. Answer inside <answer></answer>.\n","exit":0,"truncated":false},"title":"cat task.md","time":{"start":1795938863760,"end":1795938891301}},"metadata":{"openai":{"itemId":"fc_sim_8_1"}}}');
INSERT INTO part VALUES('prt_2264cb797001rZaWcrJVVJiS1V','msg_2264c0625001hXHyqhqN6zCaLv','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938891676,1795938891818,'{"reason":"tool-calls","type":"step-finish","tokens":{"total":6427,"input":6403,"output":24,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}');
INSERT INTO part VALUES('prt_2264cc909001kHC03PKs9WJqMB','msg_2264cba88001YNeAmGPNSqjjNx','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938896137,1795938896182,'{"type":"step-start"}');
INSERT INTO part VALUES('prt_2264cc987001oqeq4ELQAyWnar','msg_2264cba88001YNeAmGPNSqjjNx','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938896290,1795938896529,'{"type":"text","text":"I located the record value in the question and wrote it in the form the skill asks for.\n<answer>4821 mi</answer>","time":{"start":1795938896263,"end":1795938896504},"metadata":{"openai":{"itemId":"msg_sim_9"}}}');
INSERT INTO part VALUES('prt_2264ccab3001fm3a3oAxNgAGBf','msg_2264cba88001YNeAmGPNSqjjNx','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938896586,1795938896654,'{"reason":"stop","type":"step-finish","tokens":{"total":6490,"input":6462,"output":28,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}');
INSERT INTO part VALUES('prt_2264e0846001sffqvQ33WnN3Zs','msg_2264e0840001cOFbr3eitlriza','ses_dd9b47858ffeRtu0RcUrsxdClh',1795938978061,1795938978096,'{"type":"text","text":"\"Note the serial code. Record value: 77. Answer inside <answer></answer>.\""}');
INSERT INTO part VALUES('prt_2264f0298001azC37IuLClVPZv','msg_2264e85da001yV69gm1Emrm3Iy','ses_dd9b47858ffeRtu0RcUrsxdClh',1795939041945,1795939042056,'{"type":"step-start"}');
INSERT INTO part VALUES('prt_2264f0398001War4zWo6vbf1Pd','msg_2264e85da001yV69gm1Emrm3Iy','ses_dd9b47858ffeRtu0RcUrsxdClh',1795939042200,1795939042439,'{"type":"text","text":"The question quotes one record value; here it is, formatted as instructed.\n<answer>77</answer>","time":{"start":1795939042200,"end":1795939042359},"metadata":{"openai":{"itemId":"msg_sim_10"}}}');
INSERT INTO part VALUES('prt_2264f0511001hd1z014tM1u25c','msg_2264e85da001yV69gm1Emrm3Iy','ses_dd9b47858ffeRtu0RcUrsxdClh',1795939042577,1795939042606,'{"reason":"stop","type":"step-finish","tokens":{"total":6532,"input":6508,"output":24,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}');
CREATE TABLE `session_context_epoch` (
          `session_id` text PRIMARY KEY,
          `baseline` text NOT NULL,
          `snapshot` text NOT NULL,
          `baseline_seq` integer NOT NULL,
          CONSTRAINT `fk_session_context_epoch_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `session_input` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `prompt` text NOT NULL,
          `delivery` text NOT NULL,
          `admitted_seq` integer NOT NULL,
          `promoted_seq` integer,
          `time_created` integer NOT NULL,
          CONSTRAINT `fk_session_input_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `session_message` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `type` text NOT NULL,
          `seq` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_session_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `session` (
          `id` text PRIMARY KEY,
          `project_id` text NOT NULL,
          `workspace_id` text,
          `parent_id` text,
          `slug` text NOT NULL,
          `directory` text NOT NULL,
          `path` text,
          `title` text NOT NULL,
          `version` text NOT NULL,
          `share_url` text,
          `summary_additions` integer,
          `summary_deletions` integer,
          `summary_files` integer,
          `summary_diffs` text,
          `metadata` text,
          `cost` real DEFAULT 0 NOT NULL,
          `tokens_input` integer DEFAULT 0 NOT NULL,
          `tokens_output` integer DEFAULT 0 NOT NULL,
          `tokens_reasoning` integer DEFAULT 0 NOT NULL,
          `tokens_cache_read` integer DEFAULT 0 NOT NULL,
          `tokens_cache_write` integer DEFAULT 0 NOT NULL,
          `revert` text,
          `permission` text,
          `agent` text,
          `model` text,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `time_compacting` integer,
          `time_archived` integer,
          CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
INSERT INTO session VALUES('ses_dd9b47858ffeRtu0RcUrsxdClh','global',NULL,NULL,'kind-lagoon','/tmp/h3-oc-home/proj','tmp/h3-oc-home/proj','New session - 2026-11-29T07:53:33.863Z','1.18.33',NULL,0,0,0,NULL,NULL,0.0,19373,76,0,0,0,NULL,'[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]','build','{"id":"sim-target","providerID":"sim","variant":"default"}',1795938813863,1795939043623,NULL,NULL);
CREATE TABLE `todo` (
          `session_id` text NOT NULL,
          `content` text NOT NULL,
          `status` text NOT NULL,
          `priority` text NOT NULL,
          `position` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `todo_pk` PRIMARY KEY(`session_id`, `position`),
          CONSTRAINT `fk_todo_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `session_share` (
          `session_id` text PRIMARY KEY,
          `id` text NOT NULL,
          `secret` text NOT NULL,
          `url` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `fk_session_share_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE IF NOT EXISTS "migration" (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL);
INSERT INTO migration VALUES('20260127222353_familiar_lady_ursula',1795938779504);
INSERT INTO migration VALUES('20260211171708_add_project_commands',1795938779517);
INSERT INTO migration VALUES('20260213144116_wakeful_the_professor',1795938779517);
INSERT INTO migration VALUES('20260225215848_workspace',1795938779517);
INSERT INTO migration VALUES('20260227213759_add_session_workspace_id',1795938779518);
INSERT INTO migration VALUES('20260228203230_blue_harpoon',1795938779518);
INSERT INTO migration VALUES('20260303231226_add_workspace_fields',1795938779518);
INSERT INTO migration VALUES('20260309230000_move_org_to_state',1795938779518);
INSERT INTO migration VALUES('20260312043431_session_message_cursor',1795938779518);
INSERT INTO migration VALUES('20260323234822_events',1795938779533);
INSERT INTO migration VALUES('20260410174513_workspace-name',1795938779534);
INSERT INTO migration VALUES('20260413175956_chief_energizer',1795938779572);
INSERT INTO migration VALUES('20260423070820_add_icon_url_override',1795938779572);
INSERT INTO migration VALUES('20260427172553_slow_nightmare',1795938779573);
INSERT INTO migration VALUES('20260428004200_add_session_path',1795938779573);
INSERT INTO migration VALUES('20260501142318_next_venus',1795938779600);
INSERT INTO migration VALUES('20260504145000_add_sync_owner',1795938779601);
INSERT INTO migration VALUES('20260507164347_add_workspace_time',1795938779630);
INSERT INTO migration VALUES('20260510033149_session_usage',1795938779630);
INSERT INTO migration VALUES('20260511000411_data_migration_state',1795938779788);
INSERT INTO migration VALUES('20260511173437_session-metadata',1795938779789);
INSERT INTO migration VALUES('20260601010001_normalize_storage_paths',1795938779790);
INSERT INTO migration VALUES('20260601202201_amazing_prowler',1795938779790);
INSERT INTO migration VALUES('20260602002951_lowly_union_jack',1795938779830);
INSERT INTO migration VALUES('20260602182828_add_project_directories',1795938779831);
INSERT INTO migration VALUES('20260603001617_session_message_projection_indexes',1795938779831);
INSERT INTO migration VALUES('20260603040000_session_message_projection_order',1795938779872);
INSERT INTO migration VALUES('20260603141458_session_input_inbox',1795938779873);
INSERT INTO migration VALUES('20260603160727_jittery_ezekiel_stane',1795938779873);
INSERT INTO migration VALUES('20260604172448_event_sourced_session_input',1795938779874);
INSERT INTO migration VALUES('20260605003541_add_session_context_snapshot',1795938779913);
INSERT INTO migration VALUES('20260605042240_add_context_epoch_agent',1795938779913);
INSERT INTO migration VALUES('20260611035744_credential',1795938779914);
INSERT INTO migration VALUES('20260611192811_lush_chimera',1795938779914);
INSERT INTO migration VALUES('20260612174303_project_dir_strategy',1795938779948);
INSERT INTO migration VALUES('20260622142730_simplify_session_context_epoch',1795938779948);
INSERT INTO migration VALUES('20260622170816_reset_v2_session_state',1795938779949);
INSERT INTO migration VALUES('20260622202450_simplify_session_input',1795938779949);
CREATE UNIQUE INDEX `event_aggregate_seq_idx` ON `event` (`aggregate_id`,`seq`);
CREATE INDEX `event_aggregate_type_seq_idx` ON `event` (`aggregate_id`,`type`,`seq`);
CREATE UNIQUE INDEX `permission_project_action_resource_idx` ON `permission` (`project_id`,`action`,`resource`);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_input_session_pending_delivery_seq_idx` ON `session_input` (`session_id`,`promoted_seq`,`delivery`,`admitted_seq`);
CREATE UNIQUE INDEX `session_input_session_admitted_seq_idx` ON `session_input` (`session_id`,`admitted_seq`);
CREATE UNIQUE INDEX `session_input_session_promoted_seq_idx` ON `session_input` (`session_id`,`promoted_seq`);
CREATE UNIQUE INDEX `session_message_session_seq_idx` ON `session_message` (`session_id`,`seq`);
CREATE INDEX `session_message_session_type_seq_idx` ON `session_message` (`session_id`,`type`,`seq`);
CREATE INDEX `session_message_session_time_created_id_idx` ON `session_message` (`session_id`,`time_created`,`id`);
CREATE INDEX `session_message_time_created_idx` ON `session_message` (`time_created`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_workspace_idx` ON `session` (`workspace_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
CREATE INDEX `todo_session_idx` ON `todo` (`session_id`);
COMMIT;
