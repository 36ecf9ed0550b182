/**
 * For tests that write a rule's target as iptables text (`'-j DROP'`, `'-j cali-pi-a'`,
 * `'-j MARK --set-xmark 0x1/0x1'`): the neutral `Action` the iptables backend renders as
 * exactly that text. Throws for anything else, so a test cannot silently mean another target.
 */
import { ACCEPT, DROP, REJECT, RETURN, clearMark, goTo, jump, setMark, type Action } from '../../src/dataplane/action.ts';
import { actionText } from '../../src/dataplane/iptables/rule-text.ts';

const BY_TEXT: Readonly<Record<string, Action>> = { '-j ACCEPT': ACCEPT, '-j DROP': DROP, '-j REJECT': REJECT, '-j RETURN': RETURN };

export function actionFromText(text: string): Action {
  const mark = /^-j MARK --set-xmark (0x[0-9a-f]+)\/(0x[0-9a-f]+)$/.exec(text);
  const action =
    BY_TEXT[text] ??
    (mark !== null ? (Number(mark[1]) === 0 ? clearMark(Number(mark[2])) : setMark(Number(mark[1]))) : /^-j cali-\S+$/.test(text) ? jump(text.slice(3)) : /^-g \S+$/.test(text) ? goTo(text.slice(3)) : undefined);
  if (action === undefined || actionText(action) !== text) throw new Error(`actionFromText: '${text}' is not a target this helper knows`);
  return action;
}
